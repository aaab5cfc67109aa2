package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/internal/openapitest"
	"chargeonce/store"
)

// badRequest is one request that must be refused.
type badRequest struct {
	name   string
	method string
	path   string
	header map[string]string
	body   string
}

// validCharge is a charge body the provider would accept.
const validCharge = `{"amount": 100, "currency": "TRY", "source": "tok_visa", "merchant_reference": "shop-1-0199aaaa00007000800000000000ffff"}`

// quotedKey is a well-formed Idempotency-Key that belongs to no attempt.
const quotedKey = `"0199aaaa-0000-7000-8000-00000000ffff"`

func TestBadInput_IsRefusedWithAProblemAndChangesNothing(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	placed := s.createOrder(t, "548.90", "TRY")
	paid := s.createOrder(t, "12.00", "EUR")
	require.Equal(t, http.StatusOK, s.checkout(t, paid, "tok_visa").status)
	before := s.snapshot(t, placed, paid)

	huge := strings.Repeat("x", 1<<20)
	checkoutPath := fmt.Sprintf("/api/orders/%d/checkout", placed)
	refundPath := fmt.Sprintf("/api/orders/%d/refunds", paid)
	refundKey := func(header string) map[string]string { return map[string]string{"Idempotency-Key": header} }
	api := []badRequest{
		{name: "malformed JSON", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY"`},
		{name: "not JSON", path: "/api/orders", body: `amount=1.00&currency=TRY`},
		{name: "huge body", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "description": "` + huge + `"}`},
		{name: "amount as a number", path: "/api/orders", body: `{"amount": 1.5, "currency": "TRY"}`},
		{name: "currency as a number", path: "/api/orders", body: `{"amount": "1.00", "currency": 949}`},
		{name: "array body", path: "/api/orders", body: `[{"amount": "1.00", "currency": "TRY"}]`},
		{name: "null body", path: "/api/orders", body: `null`},
		{name: "empty body", path: "/api/orders", body: ``},
		{name: "negative amount", path: "/api/orders", body: `{"amount": "-1.00", "currency": "TRY"}`},
		{name: "zero amount", path: "/api/orders", body: `{"amount": "0.00", "currency": "TRY"}`},
		{name: "overflowing amount", path: "/api/orders", body: `{"amount": "99999999999999999999.99", "currency": "TRY"}`},
		{name: "int64 overflow in minor units", path: "/api/orders", body: `{"amount": "92233720368547758.08", "currency": "TRY"}`},
		{name: "too many decimals", path: "/api/orders", body: `{"amount": "1.001", "currency": "TRY"}`},
		{name: "decimals on a currency without", path: "/api/orders", body: `{"amount": "1.5", "currency": "JPY"}`},
		{name: "exponent", path: "/api/orders", body: `{"amount": "1e3", "currency": "TRY"}`},
		{name: "NaN", path: "/api/orders", body: `{"amount": "NaN", "currency": "TRY"}`},
		{name: "unknown currency", path: "/api/orders", body: `{"amount": "1.00", "currency": "XXQ"}`},
		{name: "lower-case currency", path: "/api/orders", body: `{"amount": "1.00", "currency": "try"}`},
		{name: "unknown field", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "discount": "1.00"}`},
		{name: "trailing data", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY"} {"amount": "2.00", "currency": "TRY"}`},
		{name: "text content type", path: "/api/orders", header: map[string]string{"Content-Type": "text/plain"}, body: `{"amount": "1.00", "currency": "TRY"}`},
		{name: "checkout malformed JSON", path: checkoutPath, body: `{"card_token": `},
		{name: "checkout token as a number", path: checkoutPath, body: `{"card_token": 4242}`},
		{name: "checkout empty token", path: checkoutPath, body: `{"card_token": ""}`},
		{name: "checkout missing token", path: checkoutPath, body: `{}`},
		{name: "checkout huge body", path: checkoutPath, body: `{"card_token": "` + huge + `"}`},
		{name: "checkout unknown field", path: checkoutPath, body: `{"card_token": "tok_visa", "amount": "0.01"}`},
		{name: "checkout order not a number", path: "/api/orders/abc/checkout", body: `{"card_token": "tok_visa"}`},
		{name: "checkout negative order", path: "/api/orders/-1/checkout", body: `{"card_token": "tok_visa"}`},
		{name: "checkout overflowing order", path: "/api/orders/99999999999999999999999/checkout", body: `{"card_token": "tok_visa"}`},
		{name: "checkout unknown order", path: "/api/orders/987654321/checkout", body: `{"card_token": "tok_visa"}`},
		{name: "order not a number", method: http.MethodGet, path: "/api/orders/1e3"},
		// Input that could mean two things to two readers.
		{name: "case-variant field", path: "/api/orders", body: `{"amount": "1.00", "AMOUNT": "1000.00", "currency": "TRY"}`},
		{name: "field folded by Unicode", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "deſcription": "x"}`},
		{name: "duplicate field", path: "/api/orders", body: `{"amount": "1.00", "amount": "1000.00", "currency": "TRY"}`},
		{name: "checkout duplicate field", path: checkoutPath, body: `{"card_token": "tok_visa", "card_token": "tok_chargeDeclined"}`},
		{name: "invalid UTF-8", path: "/api/orders", body: "{\"amount\": \"1.00\", \"currency\": \"TRY\", \"description\": \"a\xffb\"}"},
		{name: "right-to-left override", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "description": "gift \u202Eexe.txt"}`},
		{name: "zero-width space", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "description": "pay\u200Bpal"}`},
		{name: "byte order mark", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "description": "\uFEFFgift"}`},
		{name: "amount with leading zeros", path: "/api/orders", body: `{"amount": "0001.00", "currency": "TRY"}`},
		{name: "amount with fewer decimals", path: "/api/orders", body: `{"amount": "1.5", "currency": "TRY"}`},
		{name: "amount over the maximum", path: "/api/orders", body: `{"amount": "1000000.00", "currency": "TRY"}`},
		{name: "amount at the int64 maximum", path: "/api/orders", body: `{"amount": "92233720368547758.07", "currency": "TRY"}`},
		{name: "settlement date 0000-01-01", method: http.MethodGet, path: "/api/settlements/0000-01-01"},
		{name: "settlement run of 0000-01-01", path: "/api/settlements/0000-01-01/run"},
		{name: "settlement date in the future", method: http.MethodGet, path: "/api/settlements/2999-01-01"},
		{name: "double slash", method: http.MethodGet, path: fmt.Sprintf("//api/orders/%d", placed)},
		{name: "double slash checkout", path: "/" + checkoutPath, body: `{"card_token": "tok_visa"}`},
		{name: "dot segment", method: http.MethodGet, path: fmt.Sprintf("/api/./orders/%d", placed)},
		{name: "no route", method: http.MethodGet, path: "/api/refunds"},
		{name: "wrong method", method: http.MethodDelete, path: fmt.Sprintf("/api/orders/%d", placed)},
		// What the document forbids, sent on purpose.
		{name: "null description", path: "/api/orders", body: `{"amount": "1.00", "currency": "TRY", "description": null}`},
		{name: "refund without a reason", path: refundPath, header: refundKey(quotedKey), body: `{"amount": "1.00"}`},
		{name: "refund with a null reason", path: refundPath, header: refundKey(quotedKey), body: `{"amount": "1.00", "reason": null}`},
		{name: "refund with a null amount", path: refundPath, header: refundKey(quotedKey), body: `{"amount": null, "reason": "x"}`},
		{name: "refund key as a bare token", path: refundPath, header: refundKey(strings.Trim(quotedKey, `"`)), body: `{"amount": "1.00", "reason": "x"}`},
		{name: "refund key as an integer", path: refundPath, header: refundKey("42"), body: `{"amount": "1.00", "reason": "x"}`},
		{name: "refund key as a list", path: refundPath, header: refundKey(`"a", "b"`), body: `{"amount": "1.00", "reason": "x"}`},
	}
	// Event endpoints at the inside of the network, in every spelling; the
	// stack allows loopback for its receivers, so loopback is left out.
	for _, u := range []string{
		"https://169.254.169.254/", "https://10.0.0.1/", "https://0.0.0.0:8443/", "https://[::ffff:169.254.169.254]/",
		"https://2130706433/", "https://0177.0.0.1/", "https://[fd00::1]/", "https://100.64.0.1/",
	} {
		api = append(api, badRequest{name: "event endpoint at " + u, path: "/api/webhook-endpoints",
			body: `{"url": "` + u + `", "eventTypes": [], "description": ""}`})
	}
	for _, c := range api {
		t.Run("api/"+c.name, func(t *testing.T) {
			s.requireProblem(t, s.apiURL, c)
		})
	}

	charge := func(key string) map[string]string {
		h := map[string]string{}
		if key != "" {
			h["Idempotency-Key"] = key
		}
		return h
	}
	tooLong := `"` + strings.Repeat("k", 256) + `"`
	provider := []badRequest{
		{name: "missing key", header: charge(""), body: validCharge},
		{name: "empty key", header: charge(`""`), body: validCharge},
		{name: "key too long", header: charge(tooLong), body: validCharge},
		{name: "unterminated key", header: charge(`"0199aaaa`), body: validCharge},
		{name: "key with non-ASCII", header: charge(`"ключ"`), body: validCharge},
		{name: "key as a list", header: charge(`"a", "b"`), body: validCharge},
		{name: "key as an integer", header: charge(`42`), body: validCharge},
		{name: "negative amount", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": -100`, 1)},
		{name: "zero amount", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 0`, 1)},
		{name: "overflowing amount", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 1e30`, 1)},
		{name: "int64 overflow", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 9223372036854775808`, 1)},
		{name: "fractional amount", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 1.5`, 1)},
		{name: "amount as a string", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": "100"`, 1)},
		{name: "unknown currency", header: charge(quotedKey), body: strings.Replace(validCharge, `"TRY"`, `"XXQ"`, 1)},
		{name: "missing source", header: charge(quotedKey), body: strings.Replace(validCharge, `"source": "tok_visa", `, ``, 1)},
		{name: "missing reference", header: charge(quotedKey), body: `{"amount": 100, "currency": "TRY", "source": "tok_visa"}`},
		{name: "malformed JSON", header: charge(quotedKey), body: `{"amount": 100,`},
		{name: "huge body", header: charge(quotedKey), body: `{"amount": 100, "currency": "TRY", "source": "tok_visa", "description": "` + huge + `"}`},
		{name: "case-variant field", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 100, "AMOUNT": 100000`, 1)},
		{name: "duplicate field", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 100, "amount": 100000`, 1)},
		{name: "invalid UTF-8", header: charge(quotedKey), body: strings.Replace(validCharge, `"tok_visa"`, "\"tok_\xff\"", 1)},
		{name: "amount over the maximum", header: charge(quotedKey), body: strings.Replace(validCharge, `"amount": 100`, `"amount": 100000000`, 1)},
	}
	for _, c := range provider {
		c.method, c.path = http.MethodPost, "/v1/charges"
		t.Run("provider/"+c.name, func(t *testing.T) {
			s.requireProblem(t, s.providerURL, c)
		})
	}

	// Control characters in a header never reach a handler: the HTTP
	// server refuses the request line by line, and stays up.
	t.Run("control characters in headers", func(t *testing.T) {
		body := `{"card_token": "tok_visa"}`
		require.Equal(t, http.StatusBadRequest, rawPost(t, s.apiURL, checkoutPath, "Authorization: Bearer "+s.apiKey+"\r\nX-Request-Note: a\x01b", body))
		require.Equal(t, http.StatusBadRequest, rawPost(t, s.providerURL, "/v1/charges", "Idempotency-Key: \"0199aaaa-0000-7000-8000-00000000ff\x7f\"", validCharge))
		require.Equal(t, http.StatusBadRequest, rawPost(t, s.providerURL, "/v1/charges", "Idempotency-Key: \"0199aaaa-0000-7000-8000-00000000ffff\"\rX: y", validCharge))
	})

	for _, u := range []string{s.apiURL + "/healthz", s.providerURL + "/v1/idempotency"} {
		resp, err := testHTTP.Get(u)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s still answers", u)
	}
	after := s.snapshot(t, placed, paid)
	require.Equal(t, before, after, "nothing changed")
	next := s.createOrder(t, "1.00", "TRY")
	require.Equal(t, paid+1, next, "no order was created in between")
	report := checkInvariants(t, s, s.store, time.Now(), placed, paid, next)
	require.True(t, report.OK(), "%s", report)
	require.Equal(t, 3, report.Orders)
}

func TestBadInput_ConcurrentConflictingRequestsChargeOnce(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})

	t.Run("two cards for one order at once", func(t *testing.T) {
		id := s.createOrder(t, "548.90", "TRY")
		const n = 12
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			card := []string{"tok_visa", "tok_mastercard"}[i%2]
			wg.Go(func() { codes[i] = s.checkoutNoFatal(id, card).status })
		}
		wg.Wait()
		for _, c := range codes {
			require.Contains(t, []int{http.StatusOK, http.StatusConflict}, c, "answers: %v", codes)
		}
		require.Contains(t, codes, http.StatusOK)
		o := s.order(t, id)
		require.Equal(t, "paid", o.Status)
		require.Len(t, o.Attempts, 1, "one attempt, whichever card came first")
		report := checkInvariants(t, s, s.store, time.Now(), id)
		require.True(t, report.OK(), "%s", report)
		require.Equal(t, 1, report.Charges)
	})

	t.Run("one key with different bodies at once", func(t *testing.T) {
		before := len(s.provider.Charges())
		const n = 12
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			body := strings.Replace(validCharge, `"amount": 100`, `"amount": `+strconv.Itoa(100+i), 1)
			wg.Go(func() { codes[i] = postCharge(s.providerURL, quotedKey, body) })
		}
		wg.Wait()
		created := 0
		for _, c := range codes {
			require.Contains(t, []int{http.StatusCreated, http.StatusConflict, http.StatusUnprocessableEntity}, c, "answers: %v", codes)
			if c == http.StatusCreated {
				created++
			}
		}
		require.Equal(t, 1, created, "answers: %v", codes)
		require.Len(t, s.provider.Charges(), before+1, "one charge for the key")
	})
}

// stateSnapshot is what bad input must not change.
type stateSnapshot struct {
	Charges    []fakeprovider.Charge
	Processed  int
	Orders     []orderView
	OpenCount  int
	OldestOpen time.Time
	Endpoints  []store.Endpoint
}

// snapshot reads the provider's charges, the requests it processed, the
// given orders as the API shows them, the store's open attempts and its
// event endpoints.
func (s *checkoutStack) snapshot(t *testing.T, ids ...int64) stateSnapshot {
	t.Helper()
	snap := stateSnapshot{Charges: s.provider.Charges()}
	for _, r := range s.provider.Requests() {
		if r.Fingerprint != "" {
			snap.Processed++
		}
	}
	for _, id := range ids {
		snap.Orders = append(snap.Orders, s.order(t, id))
	}
	var err error
	snap.OpenCount, snap.OldestOpen, err = s.store.OpenAttemptStats(t.Context())
	require.NoError(t, err)
	snap.Endpoints, err = s.store.Endpoints(t.Context())
	require.NoError(t, err)
	return snap
}

// requireProblem sends c to base and requires a 4xx problem+json answer.
func (s *checkoutStack) requireProblem(t *testing.T, base string, c badRequest) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, base+c.path, strings.NewReader(c.body))
	require.NoError(t, err)
	if c.body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	client := testHTTP
	if base == s.apiURL {
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
		// A bad request breaks the OpenAPI document's rules on purpose;
		// its answer must still follow them.
		client = s.api
		openapitest.ResponsesOnly(req)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.GreaterOrEqual(t, resp.StatusCode, 400, "body: %s", data)
	require.Less(t, resp.StatusCode, 500, "body: %s", data)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"), "body: %s", data)
	var p problemView
	require.NoError(t, json.Unmarshal(data, &p), "body: %s", data)
	require.Equal(t, resp.StatusCode, p.Status)
	require.NotEmpty(t, p.Title)
}

// rawPost writes a POST by hand, since Go's client refuses to send a header
// with control characters, and returns the answer's status.
func rawPost(t *testing.T, base, path, header, body string) int {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, u.Host, header, len(body), body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// postCharge sends a charge straight to the provider from a goroutine and
// returns its status, 0 when no answer came.
func postCharge(base, key, body string) int {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/charges", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
