package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/client"
	"chargeonce/internal/apikey"
)

// requireProblem asserts that err is a *client.Problem of this status and
// type, and returns it.
func requireProblem(t *testing.T, err error, status int, typ wire.ProblemType) *client.Problem {
	t.Helper()
	var p *client.Problem
	require.ErrorAs(t, err, &p)
	require.Equal(t, status, p.Status, "%v", err)
	require.Equal(t, typ, p.Type, "%v", err)
	require.Equal(t, status, client.HTTPStatus(err))
	return p
}

func TestClient_CreatesAndReadsAnOrder(t *testing.T) {
	ctx := context.Background()
	api := startAPI(t, true).client(t, apikey.ScopeCheckout)

	created, err := api.CreateOrder(ctx, "548.90", "TRY", "a rug")
	require.NoError(t, err)
	require.Equal(t, "placed", created.Status)
	require.Equal(t, "548.90", created.Total)
	require.Equal(t, "TRY", created.Currency)
	require.Equal(t, "a rug", created.Description)

	read, err := api.GetOrder(ctx, created.ID)
	require.NoError(t, err)
	require.Equal(t, created, read)
	require.Empty(t, read.Attempts)
}

func TestClient_RefusedInputIsAProblemAndCreatesNothing(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t, apikey.ScopeCheckout)

	_, err := a.badInputClient(t, apikey.ScopeCheckout).CreateOrder(ctx, "548.9O", "TRY", "")
	p := requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	require.Contains(t, p.Detail, "amount")
	require.Contains(t, p.Error(), "(HTTP 400)")

	_, err = api.GetOrder(ctx, 1)
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)
}

// Before any worker has started, a checkout charges nothing and says when
// to pay again.
func TestClient_CheckoutThatChargedNothingCarriesRetryAfter(t *testing.T) {
	ctx := context.Background()
	api := startAPI(t, false).client(t, apikey.ScopeCheckout)
	o, err := api.CreateOrder(ctx, "10.00", "TRY", "")
	require.NoError(t, err)

	res, err := api.Checkout(ctx, o.ID, "tok_visa")

	p := requireProblem(t, err, http.StatusServiceUnavailable, wire.ProblemNoPaymentWorker)
	require.Equal(t, 5*time.Second, p.RetryAfter)
	require.Equal(t, client.CheckoutResult{}, res)
	after, err := api.GetOrder(ctx, o.ID)
	require.NoError(t, err)
	require.Equal(t, "placed", after.Status)
	require.Empty(t, after.Attempts)
}

// A refund without a key is sent under a new UUIDv7, which the answer
// returns even when the refund is refused, so that a retry can send it
// again.
func TestClient_RefundGeneratesAnIdempotencyKeyAndReturnsIt(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t, apikey.ScopeCheckout, apikey.ScopeRefund)
	o, err := api.CreateOrder(ctx, "10.00", "TRY", "")
	require.NoError(t, err)

	res, err := api.RefundOrder(ctx, o.ID, "", wire.RefundRequest{Reason: "never paid"})

	requireProblem(t, err, http.StatusConflict, wire.ProblemNotRefundable)
	key, err := uuid.Parse(res.IdempotencyKey)
	require.NoError(t, err, "the key returned: %q", res.IdempotencyKey)
	require.Equal(t, uuid.Version(7), key.Version())

	// The caller's key is the one sent, as the header's Structured Field
	// String: one with spaces is a key like any other.
	res, err = api.RefundOrder(ctx, o.ID, "order 1001, refund 1", wire.RefundRequest{})
	requireProblem(t, err, http.StatusConflict, wire.ProblemNotRefundable)
	require.Equal(t, "order 1001, refund 1", res.IdempotencyKey)

	// A key that no String can hold is refused before anything is sent.
	res, err = api.RefundOrder(ctx, o.ID, "anahtar-ş", wire.RefundRequest{})
	require.ErrorContains(t, err, "Structured Field String")
	require.Zero(t, client.HTTPStatus(err))
	require.Equal(t, "anahtar-ş", res.IdempotencyKey)
}

func TestClient_UnknownRefundsChargesAndSettlementsAreProblems(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t)

	_, err := api.GetRefund(ctx, "01a1d96c-e23d-77bf-801e-9df969c1d378")
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	_, err = api.RefundCharge(ctx, "ch_000001", "", wire.RefundRequest{})
	requireProblem(t, err, http.StatusConflict, wire.ProblemNotRefundable)

	_, err = api.GetSettlement(ctx, "", time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly))
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	_, err = a.badInputClient(t, apikey.ScopeOperator).RunSettlement(ctx, "", "2026-13-01")
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
}

func TestClient_AKeyOutsideTheRoutesScopeIsForbidden(t *testing.T) {
	a := startAPI(t, true)
	_, err := a.client(t, apikey.ScopeCheckout).GetSettlement(context.Background(), "", "2026-03-14")
	requireProblem(t, err, http.StatusForbidden, wire.ProblemForbidden)

	_, err = client.New(a.url, "", client.WithHTTPClient(checkedHTTP(t, true))).GetOrder(context.Background(), 1)
	requireProblem(t, err, http.StatusUnauthorized, wire.ProblemAPIKeyRequired)
}

func TestClient_HealthNeedsNoKey(t *testing.T) {
	a := startAPI(t, true)
	h, err := client.New(a.url+"/", "", client.WithHTTPClient(checkedHTTP(t, false))).Health(context.Background())
	require.NoError(t, err)
	require.Equal(t, wire.Health{Status: "ok"}, h)
}

func TestClient_UnreachableAPINamesTheAddressTried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	_, err = client.New(addr, "ck_x").GetOrder(context.Background(), 1)

	require.ErrorContains(t, err, "cannot reach the checkout API at "+addr+": ")
	require.Zero(t, client.HTTPStatus(err))
}

// An answer that is not the API's, as from a proxy in front of it, is an
// *AnswerError that names the request, the status and the content type.
func TestClient_AnAnswerThatIsNotTheAPIsIsAnAnswerError(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string
	}{
		{"an HTML error page", http.StatusBadGateway, "text/html", "<h1>Bad Gateway</h1>", "the content type is not application/problem+json"},
		{"a JSON error that is not a problem", http.StatusBadRequest, "application/json", `{"message": "no"}`, "the content type is not application/problem+json"},
		{"a problem that is not JSON", http.StatusInternalServerError, "application/problem+json", "oops", "decode the body"},
		{"a success that is not JSON", http.StatusOK, "application/json", "{", "decode the body"},
		{"a success of another content type", http.StatusOK, "text/plain", "ok", "the content type is not application/json"},
		{"a body over the limit", http.StatusOK, "application/json", `"` + strings.Repeat("x", client.MaxAnswerBytes) + `"`, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)

			_, err := client.New(srv.URL, "ck_x").GetOrder(context.Background(), 7)

			var aerr *client.AnswerError
			require.ErrorAs(t, err, &aerr)
			require.Equal(t, client.AnswerError{Request: "GET /api/orders/7", Status: tt.status, ContentType: tt.contentType, Err: aerr.Err}, *aerr)
			require.ErrorContains(t, err, tt.want)
			require.ErrorContains(t, err, "GET /api/orders/7 with HTTP "+strconv.Itoa(tt.status)+" and "+tt.contentType)
			require.Equal(t, tt.status, client.HTTPStatus(err))
			var p *client.Problem
			require.False(t, errors.As(err, &p))
		})
	}
}
