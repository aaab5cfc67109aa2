package stripe

import (
	"context"
	"net/http"
	"strings"

	"chargeonce/provider"
)

// exchange is what went over the wire for one call of the library: the
// library reads status and headers into its own types, and loses them when a
// body is unreadable, but the outcome depends on them.
type exchange struct {
	// sent is false while no request has left; a refused connection leaves
	// it false, since then the provider cannot have seen a byte.
	sent bool
	// status is 0 when no response headers arrived.
	status int
	header http.Header
}

// replayed reports Stripe's Idempotent-Replayed: true, an answer from its
// idempotency store.
func (ex *exchange) replayed() bool {
	return strings.EqualFold(strings.TrimSpace(ex.header.Get("Idempotent-Replayed")), "true")
}

type exchangeKey struct{}

// record returns a context under which the recorder fills the returned
// exchange.
func record(ctx context.Context) (context.Context, *exchange) {
	ex := &exchange{}
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

// recorder is the transport of the library's HTTP client. It fills the
// exchange of the call, and sends each request once: net/http's Transport
// treats a request carrying an Idempotency-Key as replayable and silently
// resends it when a reused connection turns out to be closed, which would
// hide the lost answer and break "one request per activity attempt". Without
// GetBody it cannot rewind the body, so it never resends.
type recorder struct {
	next http.RoundTripper
}

func (t *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		ex = &exchange{}
	}
	once := req.Clone(req.Context())
	once.GetBody = nil
	resp, err := t.next.RoundTrip(once)
	if err != nil {
		ex.sent = !provider.DialFailed(err)
		return nil, err
	}
	ex.sent, ex.status, ex.header = true, resp.StatusCode, resp.Header
	return resp, nil
}
