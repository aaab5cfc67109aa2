package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	_ "modernc.org/sqlite" // the driver that reads the store's file directly

	"chargeonce/activities/activitiestest"
	"chargeonce/api"
	"chargeonce/checkout"
	"chargeonce/docs"
	"chargeonce/hold"
	"chargeonce/internal/apikey"
	"chargeonce/internal/openapitest"
	"chargeonce/internal/syncbuf"
	"chargeonce/internal/webhook"
	"chargeonce/provider/routing"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/workflows"
)

// testAPI is the API over a real SQLite store, with a Temporal client that
// is never dialled: everything these tests send is answered before a
// workflow would be started. Every request and answer is checked against
// docs/openapi.json (openapitest), but for the requests of bad-input tests,
// sent with sendInvalid, whose answers alone are.
type testAPI struct {
	url   string
	store store.Store
	db    *sql.DB // the same file, read behind the store's back
	// key holds every scope; send authenticates with it.
	key string
	// logs is what the API logged, as JSON lines.
	logs *syncbuf.Buffer
}

// startTestAPI starts the API with the default timing published, as the
// first worker's start would have.
func startTestAPI(t *testing.T) *testAPI {
	t.Helper()
	a := startTestAPIBeforeAnyWorker(t)
	timing, err := workflows.DefaultTiming().Encode()
	require.NoError(t, err)
	_, err = a.store.PublishTiming(context.Background(), timing, false)
	require.NoError(t, err)
	return a
}

// startTestAPIBeforeAnyWorker starts the API on a database where no worker
// has published its timing.
func startTestAPIBeforeAnyWorker(t *testing.T) *testAPI {
	t.Helper()
	// Nothing listens on port 1; a test that reached Temporal would fail.
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	return startTestAPIWith(t, nil, temporal, nil, nil)
}

// startTestAPIWith starts the API on a fresh database with this routing
// (nil: every payment to chargeonce.DefaultProvider) and Temporal client,
// and the webhook secrets by provider when there are some, whose default
// provider is chargeonce.DefaultProvider. The provider events' lookups go
// to finders, by provider.
func startTestAPIWith(t *testing.T, routes *routing.Table, temporal client.Client, secrets map[string][]webhook.Secret, finders map[string]refund.Finder) *testAPI {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chargeonce.db")
	st, err := store.Open(ctx, "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	refunds, err := refund.New(refund.Config{Store: st, Temporal: temporal, Finders: finders, Logger: logger})
	require.NoError(t, err)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, Refunds: refunds, Logger: logger, Routing: routes})
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	marker := prometheus.NewCounter(prometheus.CounterOpts{Name: "chargeonce_api_test_marker_total", Help: "Proves that /metrics serves the configured registry."})
	reg.MustRegister(marker)
	marker.Inc()

	holds, err := hold.New(hold.Config{Store: st, Temporal: temporal, Logger: logger})
	require.NoError(t, err)
	h, err := api.New(api.Config{Checkout: svc, Holds: holds, Store: st, Metrics: reg, WebhookSecrets: secrets, Registerer: reg,
		Logger: logger})
	require.NoError(t, err)
	srv := httptest.NewServer(openapitest.Handler(t, h))
	t.Cleanup(srv.Close)

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	a := &testAPI{url: srv.URL, store: st, db: db, logs: logs}
	a.key = a.newKey(t, apikey.AllScopes()...)
	return a
}

// newKey stores a new API key with these scopes and returns it.
func (a *testAPI) newKey(t *testing.T, scopes ...apikey.Scope) string {
	t.Helper()
	key, rec, err := apikey.New("test", scopes, time.Now())
	require.NoError(t, err)
	require.NoError(t, a.store.CreateAPIKey(context.Background(), rec))
	return key.String()
}

// send makes one request with the key of every scope and returns the
// status, the headers and the body.
func (a *testAPI) send(t *testing.T, method, path, contentType, body string) (int, http.Header, []byte) {
	t.Helper()
	return a.sendWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": contentType}, method, path, body)
}

// sendInvalid is send for a request that the OpenAPI document forbids on
// purpose: only its answer is checked against the document.
func (a *testAPI) sendInvalid(t *testing.T, method, path, contentType, body string) (int, http.Header, []byte) {
	t.Helper()
	return a.sendInvalidWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": contentType}, method, path, body)
}

// sendInvalidWith is sendWith for a request that the OpenAPI document
// forbids on purpose.
func (a *testAPI) sendInvalidWith(t *testing.T, header map[string]string, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	marked := map[string]string{openapitest.ResponsesOnlyHeader: "1"}
	maps.Copy(marked, header)
	return a.sendWith(t, marked, method, path, body)
}

// sendWith makes one request with these headers, of which an empty one is
// not sent.
func (a *testAPI) sendWith(t *testing.T, header map[string]string, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for name, value := range header {
		if value != "" {
			req.Header.Set(name, value)
		}
	}
	resp, err := (&http.Client{}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, data
}

// snapshot dumps every row of the store's tables, to prove that a refused
// request changed nothing.
func (a *testAPI) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"orders", "payment_attempts", "provider_requests", "provider_events", "settlement_runs"} {
		rows, err := a.db.Query("SELECT * FROM " + table + " ORDER BY 1")
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			fmt.Fprintf(&b, "%s %v\n", table, vals)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
	}
	return b.String()
}

type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

func requireProblem(t *testing.T, wantStatus int, status int, header http.Header, body []byte) problemBody {
	t.Helper()
	require.Equal(t, wantStatus, status, "body: %s", body)
	require.Equal(t, "application/problem+json", header.Get("Content-Type"))
	var p problemBody
	require.NoError(t, json.Unmarshal(body, &p))
	require.Equal(t, wantStatus, p.Status)
	require.NotEmpty(t, p.Type)
	require.NotEmpty(t, p.Title)
	return p
}

func createOrder(t *testing.T, a *testAPI, body string) (int64, http.Header) {
	t.Helper()
	status, header, data := a.send(t, http.MethodPost, "/api/orders", "application/json", body)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)
	var o struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(data, &o))
	return o.ID, header
}

func TestAPI_CreateOrderAnswers201WithLocationAndTheOrder(t *testing.T) {
	a := startTestAPI(t)
	status, header, data := a.send(t, http.MethodPost, "/api/orders", "application/json",
		`{"amount": "548.90", "currency": "TRY", "description": "Bookstore order"}`)
	require.Equal(t, http.StatusCreated, status, "body: %s", data)

	var o struct {
		ID                int64           `json:"id"`
		Status            string          `json:"status"`
		Total             string          `json:"total"`
		Currency          string          `json:"currency"`
		Description       string          `json:"description"`
		ProviderPaymentID *string         `json:"providerPaymentId"`
		Attempts          json.RawMessage `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal(data, &o))
	require.Positive(t, o.ID)
	require.Equal(t, fmt.Sprintf("/api/orders/%d", o.ID), header.Get("Location"))
	require.Equal(t, "placed", o.Status)
	require.Equal(t, "548.90", o.Total)
	require.Equal(t, "TRY", o.Currency)
	require.Equal(t, "Bookstore order", o.Description)
	require.Nil(t, o.ProviderPaymentID)
	require.JSONEq(t, `[]`, string(o.Attempts))

	stored, attempts, err := a.store.GetOrder(context.Background(), o.ID)
	require.NoError(t, err)
	require.Equal(t, int64(54890), stored.Amount.Minor)
	require.Empty(t, attempts)

	status, _, data = a.send(t, http.MethodGet, header.Get("Location"), "", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(data), `"total":"548.90"`)
}

func TestAPI_BadOrderBodiesAre400AndChangeNothing(t *testing.T) {
	a := startTestAPI(t)
	createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)

	tests := []struct {
		name        string
		contentType string
		body        string
		detail      string
	}{
		{"negative amount", "application/json", `{"amount": "-5.00", "currency": "TRY"}`, "not a plain decimal"},
		{"zero amount", "application/json", `{"amount": "0.00", "currency": "TRY"}`, "not positive"},
		{"three decimals on TRY", "application/json", `{"amount": "548.901", "currency": "TRY"}`, "TRY allows 2"},
		{"decimals on JPY", "application/json", `{"amount": "100.5", "currency": "JPY"}`, "JPY allows 0"},
		{"unknown currency", "application/json", `{"amount": "1.00", "currency": "XYZ"}`, "not an ISO 4217 currency"},
		{"lower-case currency", "application/json", `{"amount": "1.00", "currency": "try"}`, "upper-case"},
		{"JSON number amount", "application/json", `{"amount": 548.90, "currency": "TRY"}`, `field "amount" must be a JSON string`},
		{"missing amount", "application/json", `{"currency": "TRY"}`, `"amount" is required`},
		{"missing currency", "application/json", `{"amount": "1.00"}`, `"currency" is required`},
		{"null amount", "application/json", `{"amount": null, "currency": "TRY"}`, `field "amount" must not be null`},
		{"null description", "application/json", `{"amount": "1.00", "currency": "TRY", "description": null}`, `field "description" must not be null`},
		{"unknown field", "application/json", `{"amount": "1.00", "currency": "TRY", "tip": "5"}`, `unknown field "tip"`},
		{"wrong content type", "text/plain", `{"amount": "1.00", "currency": "TRY"}`, "Content-Type must be application/json"},
		{"no content type", "", `{"amount": "1.00", "currency": "TRY"}`, "Content-Type must be application/json"},
		{"1 MiB body", "application/json", `{"amount": "1.00", "currency": "TRY", "description": "` + strings.Repeat("a", 1<<20) + `"}`, "over 64 KiB"},
		{"trailing data", "application/json", `{"amount": "1.00", "currency": "TRY"} {"amount": "2.00", "currency": "TRY"}`, "nothing after it"},
		{"empty body", "application/json", ``, "body is empty"},
		{"not an object", "application/json", `["1.00", "TRY"]`, "must be a JSON object"},
		{"malformed JSON", "application/json", `{"amount": "1.00",`, "truncated"},
		{"description too long", "application/json", `{"amount": "1.00", "currency": "TRY", "description": "` + strings.Repeat("é", 501) + `"}`, "at most 500"},
		{"control character in description", "application/json", `{"amount": "1.00", "currency": "TRY", "description": "a\u0000b"}`, "control characters"},
		{"case-variant field", "application/json", `{"amount": "1.00", "AMOUNT": "1000.00", "currency": "TRY"}`, `unknown field "AMOUNT"`},
		{"field folded by Unicode", "application/json", `{"amount": "1.00", "currency": "TRY", "deſcription": "x"}`, `unknown field "deſcription"`},
		{"duplicate field", "application/json", `{"amount": "1.00", "amount": "1000.00", "currency": "TRY"}`, `field "amount" appears more than once`},
		{"invalid UTF-8", "application/json", "{\"amount\": \"1.00\", \"currency\": \"TRY\", \"description\": \"a\xffb\"}", "not valid UTF-8 at byte 55"},
		{"right-to-left override in description", "application/json", `{"amount": "1.00", "currency": "TRY", "description": "gift \u202Eexe.txt"}`, "invisible format characters, such as U+202E"},
		{"leading zeros", "application/json", `{"amount": "0001.00", "currency": "TRY"}`, `"0001.00" must be written "1.00"`},
		{"fewer decimals than the currency's", "application/json", `{"amount": "1.5", "currency": "TRY"}`, `"1.5" must be written "1.50"`},
		{"over the maximum", "application/json", `{"amount": "1000000.00", "currency": "TRY"}`, "over the largest amount, 999999.99 TRY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.snapshot(t)
			status, header, body := a.sendInvalid(t, http.MethodPost, "/api/orders", tt.contentType, tt.body)
			p := requireProblem(t, http.StatusBadRequest, status, header, body)
			require.Contains(t, p.Detail, tt.detail)
			require.Equal(t, before, a.snapshot(t))
		})
	}
}

// Every field at and just past its limits: the valid side is stored (201),
// the other refused (400), and neither is ever a 500.
func TestAPI_OrderFieldsAtTheirBoundariesAre201Or400(t *testing.T) {
	a := startTestAPI(t)
	order := func(amount, currency, description string) string {
		body, err := json.Marshal(map[string]string{"amount": amount, "currency": currency, "description": description})
		require.NoError(t, err)
		return string(body)
	}
	tests := []struct {
		name string
		body string
		want int
	}{
		{"empty description", order("1.00", "TRY", ""), http.StatusCreated},
		{"500 one-byte characters", order("1.00", "TRY", strings.Repeat("a", 500)), http.StatusCreated},
		{"500 three-byte characters", order("1.00", "TRY", strings.Repeat("€", 500)), http.StatusCreated},
		{"500 four-byte characters", order("1.00", "TRY", strings.Repeat("😀", 500)), http.StatusCreated},
		{"501 characters", order("1.00", "TRY", strings.Repeat("€", 501)), http.StatusBadRequest},
		{"smallest TRY amount", order("0.01", "TRY", ""), http.StatusCreated},
		{"smallest KWD amount", order("0.001", "KWD", ""), http.StatusCreated},
		{"smallest JPY amount", order("1", "JPY", ""), http.StatusCreated},
		{"largest amount", order("999999.99", "TRY", ""), http.StatusCreated},
		{"one minor unit past the largest amount", order("1000000.00", "TRY", ""), http.StatusBadRequest},
		{"largest JPY amount", order("99999999", "JPY", ""), http.StatusCreated},
		{"int64 maximum", order("92233720368547758.07", "TRY", ""), http.StatusBadRequest},
		{"zero", order("0", "JPY", ""), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := a.send
			if tt.want == http.StatusBadRequest {
				send = a.sendInvalid
			}
			status, _, body := send(t, http.MethodPost, "/api/orders", "application/json", tt.body)
			require.Equal(t, tt.want, status, "body: %s", body)
			if status != http.StatusCreated {
				return
			}
			var o struct {
				ID          int64  `json:"id"`
				Description string `json:"description"`
			}
			require.NoError(t, json.Unmarshal(body, &o))
			stored, _, err := a.store.GetOrder(context.Background(), o.ID)
			require.NoError(t, err)
			require.Equal(t, o.Description, stored.Description)
		})
	}
}

func TestAPI_BadCheckoutRequestsAre400AndChangeNothing(t *testing.T) {
	a := startTestAPI(t)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)
	path := fmt.Sprintf("/api/orders/%d/checkout", id)

	tests := []struct {
		name        string
		path        string
		contentType string
		body        string
		detail      string
	}{
		{"missing card token", path, "application/json", `{}`, `"card_token" is required`},
		{"empty card token", path, "application/json", `{"card_token": ""}`, `"card_token" is required`},
		{"card token with spaces", path, "application/json", `{"card_token": "tok visa"}`, "letters, digits"},
		{"card token too long", path, "application/json", `{"card_token": "` + strings.Repeat("t", 256) + `"}`, "1 to 255"},
		{"card token as number", path, "application/json", `{"card_token": 4242}`, `field "card_token" must be a JSON string`},
		{"null card token", path, "application/json", `{"card_token": null}`, `field "card_token" must not be null`},
		{"unknown field", path, "application/json", `{"card_token": "tok_visa", "amount": "1.00"}`, `unknown field "amount"`},
		{"unknown capture mode", path, "application/json", `{"card_token": "tok_visa", "capture": "later"}`, `"automatic" or "manual"`},
		{"empty capture mode", path, "application/json", `{"card_token": "tok_visa", "capture": ""}`, `"automatic" or "manual"`},
		{"unknown deadline action", path, "application/json", `{"card_token": "tok_visa", "capture": "manual", "on_deadline": "keep"}`, `"void" or "capture"`},
		{"deadline action without a mode", path, "application/json", `{"card_token": "tok_visa", "on_deadline": "void"}`, `"capture": "manual"`},
		{"deadline action of an automatic capture", path, "application/json", `{"card_token": "tok_visa", "capture": "automatic", "on_deadline": "capture"}`, `"capture": "manual"`},
		{"wrong content type", path, "application/x-www-form-urlencoded", `card_token=tok_visa`, "Content-Type"},
		{"1 MiB body", path, "application/json", `{"card_token": "` + strings.Repeat("t", 1<<20) + `"}`, "over 64 KiB"},
		{"order id not a number", "/api/orders/abc/checkout", "application/json", `{"card_token": "tok_visa"}`, "positive integer"},
		{"order id zero", "/api/orders/0/checkout", "application/json", `{"card_token": "tok_visa"}`, "positive integer"},
		{"order id negative", "/api/orders/-1/checkout", "application/json", `{"card_token": "tok_visa"}`, "positive integer"},
		{"order id with sign", fmt.Sprintf("/api/orders/+%d/checkout", id), "application/json", `{"card_token": "tok_visa"}`, "positive integer"},
		{"order id out of range", "/api/orders/99999999999999999999/checkout", "application/json", `{"card_token": "tok_visa"}`, "positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.snapshot(t)
			status, header, body := a.sendInvalid(t, http.MethodPost, tt.path, tt.contentType, tt.body)
			p := requireProblem(t, http.StatusBadRequest, status, header, body)
			require.Contains(t, p.Detail, tt.detail)
			require.Equal(t, before, a.snapshot(t))
		})
	}
}

func TestAPI_UnknownOrdersAndPathsAre404(t *testing.T) {
	a := startTestAPI(t)
	before := a.snapshot(t)

	status, header, body := a.send(t, http.MethodGet, "/api/orders/999999", "", "")
	requireProblem(t, http.StatusNotFound, status, header, body)

	status, header, body = a.send(t, http.MethodPost, "/api/orders/999999/checkout", "application/json", `{"card_token": "tok_visa"}`)
	requireProblem(t, http.StatusNotFound, status, header, body)

	status, header, body = a.sendInvalid(t, http.MethodGet, "/api/nothing-here", "", "")
	requireProblem(t, http.StatusNotFound, status, header, body)

	require.Equal(t, before, a.snapshot(t))
}

// A path has one spelling: any other is a problem+json 404 that says the
// canonical one, never the mux's redirect with an HTML body.
func TestAPI_NonCanonicalPathsAre404NotRedirects(t *testing.T) {
	a := startTestAPI(t)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)
	order := fmt.Sprintf("/api/orders/%d", id)
	before := a.snapshot(t)

	for _, call := range []struct{ method, path, body string }{
		{http.MethodGet, "/" + order, ""},
		{http.MethodGet, "/api/./orders/" + fmt.Sprint(id), ""},
		{http.MethodGet, "/api/settlements/../orders/" + fmt.Sprint(id), ""},
		{http.MethodGet, order + "/", ""},
		{http.MethodPost, "/" + order + "/checkout", `{"card_token": "tok_visa"}`},
		{http.MethodPost, "//api/orders", `{"amount": "10.00", "currency": "TRY"}`},
	} {
		t.Run(call.method+" "+call.path, func(t *testing.T) {
			status, header, body := a.sendInvalid(t, call.method, call.path, "application/json", call.body)
			p := requireProblem(t, http.StatusNotFound, status, header, body)
			require.Contains(t, p.Detail, "paths are written in one form, such as /api/")
		})
	}
	require.Equal(t, before, a.snapshot(t))
}

func TestAPI_CheckoutBeforeAnyWorkerStartedIs503AndChangesNothing(t *testing.T) {
	a := startTestAPIBeforeAnyWorker(t)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)
	before := a.snapshot(t)

	status, header, body := a.send(t, http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), "application/json", `{"card_token": "tok_visa"}`)

	p := requireProblem(t, http.StatusServiceUnavailable, status, header, body)
	require.Equal(t, "No payment worker has started yet; nothing was charged", p.Title)
	require.Equal(t, "5", header.Get("Retry-After"))
	require.Equal(t, before, a.snapshot(t), "no attempt, and the order is still placed")
}

// A timing in a format this API cannot read, published by a newer worker,
// pauses checkouts with a 503 that charges nothing, and the log names the
// cause for the operator.
func TestAPI_CheckoutUnderATimingOfANewerFormatIs503AndChangesNothing(t *testing.T) {
	a := startTestAPIBeforeAnyWorker(t)
	_, err := a.store.PublishTiming(context.Background(), []byte(`{"version":99}`), false)
	require.NoError(t, err)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "TRY"}`)
	before := a.snapshot(t)

	status, header, body := a.send(t, http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), "application/json", `{"card_token": "tok_visa"}`)

	p := requireProblem(t, http.StatusServiceUnavailable, status, header, body)
	require.Contains(t, p.Detail, "nothing was charged")
	require.Equal(t, before, a.snapshot(t), "no attempt, and the order is still placed")
	require.Contains(t, a.logs.String(), "format version 99")
}

// A checkout of an order whose currency no routing rule covers is 422,
// naming the currency and amount, and stores nothing.
func TestAPI_CheckoutThatNoRuleRoutesIs422AndChangesNothing(t *testing.T) {
	routes, err := routing.Parse([]byte("providers:\n  - {name: a, dialect: ietf, url: 'http://127.0.0.1:1'}\nrules:\n  - {currencies: [TRY], providers: [a]}\n"), t.TempDir())
	require.NoError(t, err)
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	a := startTestAPIWith(t, routes, temporal, nil, nil)
	timing, err := workflows.DefaultTiming().Encode()
	require.NoError(t, err)
	_, err = a.store.PublishTiming(context.Background(), timing, false)
	require.NoError(t, err)
	id, _ := createOrder(t, a, `{"amount": "10.00", "currency": "EUR"}`)
	before := a.snapshot(t)

	status, header, body := a.send(t, http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), "application/json", `{"card_token": "tok_visa"}`)

	p := requireProblem(t, http.StatusUnprocessableEntity, status, header, body)
	require.Equal(t, "urn:chargeonce:problem:no-route", p.Type)
	require.Equal(t, "No payment provider here takes payments of EUR 10.00, so nothing was stored or charged.", p.Detail)
	require.Equal(t, before, a.snapshot(t), "no attempt, and the order is still placed")
}

func TestAPI_WrongMethodIs405WithAllow(t *testing.T) {
	a := startTestAPI(t)
	status, header, body := a.sendInvalid(t, http.MethodDelete, "/api/orders/1", "", "")
	requireProblem(t, http.StatusMethodNotAllowed, status, header, body)
	require.Contains(t, header.Get("Allow"), http.MethodGet)
}

func TestAPI_HealthzAnswersWhileTheStoreDoes(t *testing.T) {
	a := startTestAPI(t)
	status, header, body := a.send(t, http.MethodGet, "/healthz", "", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/json", header.Get("Content-Type"))
	require.JSONEq(t, `{"status": "ok"}`, string(body))

	require.NoError(t, a.store.Close())
	status, header, body = a.send(t, http.MethodGet, "/healthz", "", "")
	requireProblem(t, http.StatusServiceUnavailable, status, header, body)
}

// The OpenAPI document is served as the repository holds it, to anyone:
// a merchant reads it before it has a key.
func TestAPI_OpenAPIDocumentIsServedWithoutAKey(t *testing.T) {
	a := startTestAPI(t)
	status, header, body := a.sendWith(t, nil, http.MethodGet, "/openapi.json", "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/json", header.Get("Content-Type"))
	require.Equal(t, docs.OpenAPI, body)
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
}

func TestAPI_MetricsServesTheConfiguredRegistry(t *testing.T) {
	a := startTestAPI(t)
	status, header, body := a.send(t, http.MethodGet, "/metrics", "", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, header.Get("Content-Type"), "text/plain")
	require.Contains(t, string(body), "chargeonce_api_test_marker_total 1")
}

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	_, err := api.New(api.Config{})
	require.ErrorContains(t, err, "Checkout is required")
}
