// Package provider is the HTTP client of the card provider's contract
// (docs/provider-http.md).
//
// It sends every charge with its Idempotency-Key as a Structured Field String
// and reads every response, or the lack of one, as a typed Outcome, so that
// callers decide on "approved", "declined", "unknown, retry with the same key"
// or "our bug, stop" rather than on raw status codes. A circuit breaker stops
// sending while the provider is failing, and says so without sending anything.
package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds how much of a response body is read. The largest
// answer of the contract is a list of the charges of one merchant reference,
// a few hundred bytes each; a body beyond this is not the provider speaking
// the contract, and reading it whole would let a broken peer exhaust memory.
const maxResponseBytes = 1 << 20

// maxRetryAfter caps the provider's Retry-After. A provider asking to wait
// longer than this is down or its header is broken; honouring it would park a
// payment for hours, while the caller's own budget and the reconciliation of
// unknown outcomes already cover a long outage.
const maxRetryAfter = 5 * time.Minute

// Config configures a Client.
type Config struct {
	// BaseURL is the provider's root, such as "https://api.provider.example"
	// or "http://127.0.0.1:8081"; a path prefix is kept.
	BaseURL string
	// HTTPClient sends the requests. It must have a positive Timeout, so that
	// a call without a context deadline cannot hang a worker forever. The
	// Client never follows redirects: a payment API that redirects a charge
	// breaks its contract, and following it could send the card elsewhere.
	HTTPClient *http.Client
	// Breaker configures the circuit breakers; the zero value is sensible.
	Breaker BreakerConfig
	// Logger receives the breakers' state changes; nil means slog.Default().
	Logger *slog.Logger
}

// Client speaks the provider contract. It is safe for concurrent use.
type Client struct {
	base *url.URL
	http *http.Client
	log  *slog.Logger
	// charges guards POST /v1/charges and lookups guards the GET endpoints.
	// They are separate so that a lookup never becomes the half-open probe
	// that decides whether charges flow again: each endpoint proves its own
	// health. See breakerVerdict for what counts as a failure.
	charges *breaker
	lookups *breaker
}

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	if cfg.HTTPClient == nil {
		return nil, errors.New("provider: Config.HTTPClient is nil; pass an *http.Client with a Timeout")
	}
	if cfg.HTTPClient.Timeout <= 0 {
		return nil, errors.New("provider: Config.HTTPClient has no Timeout; without one a request can hang forever")
	}
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	settings, err := cfg.Breaker.settings()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// A copy, so that the caller's client keeps its own redirect policy.
	hc := *cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{
		base:    base,
		http:    &hc,
		log:     log,
		charges: newBreaker("provider-charges", settings, log),
		lookups: newBreaker("provider-lookups", settings, log),
	}, nil
}

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return nil, errors.New("provider: Config.BaseURL is empty")
	case err != nil:
		return nil, fmt.Errorf("provider: Config.BaseURL %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("provider: Config.BaseURL %q: scheme must be http or https", raw)
	case u.Host == "":
		return nil, fmt.Errorf("provider: Config.BaseURL %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("provider: Config.BaseURL %q must not carry credentials", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("provider: Config.BaseURL %q must not have a query or fragment", raw)
	}
	return u, nil
}

// exchange is one request to the provider as the request helper saw it.
type exchange struct {
	// sent is false when the request never left: the context had ended,
	// the breaker refused it, or no connection could be made. Otherwise it
	// may have reached the provider.
	sent bool
	// status is 0 when no response headers arrived.
	status   int
	header   http.Header
	body     []byte
	duration time.Duration
	// failed is set when no complete response was read: BreakerOpen,
	// Timeout, TransportError, or ContractViolation for an oversized body.
	failed Outcome
	detail string
}

// send is the one request helper: it asks br for permission, sends the
// request with the injected client, reads at most maxResponseBytes of the
// answer, and tells br what the exchange says about the provider's health.
func (c *Client) send(ctx context.Context, br *breaker, method, path string, query url.Values, header http.Header, body []byte) exchange {
	if err := ctx.Err(); err != nil {
		return exchange{failed: Timeout, detail: "not sent: " + err.Error()}
	}
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return exchange{failed: InvalidRequest, detail: "not sent: " + err.Error()}
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Accept", "application/json")

	done, err := br.Allow()
	if err != nil {
		return exchange{failed: BreakerOpen, detail: "not sent: circuit breaker " + br.Name() + " is " + br.State().String()}
	}
	// net/http's Transport treats a request carrying an Idempotency-Key as
	// replayable and silently resends it when a reused connection turns out
	// to be closed. The resend would be safe (same key), but it would hide
	// the lost response from the caller and break "one request per activity
	// attempt", which the request log and the retry policy rely on. Without
	// GetBody the Transport cannot rewind the body, so it never resends.
	req.GetBody = nil
	start := time.Now()
	ex := c.roundTrip(ctx, req)
	ex.duration = time.Since(start)
	done(breakerVerdict(ctx, ex))
	return ex
}

func (c *Client) roundTrip(ctx context.Context, req *http.Request) exchange {
	resp, err := c.http.Do(req)
	if err != nil {
		return exchange{failed: transportOutcome(ctx, err), detail: err.Error(), sent: !dialFailed(err)}
	}
	defer resp.Body.Close()
	ex := exchange{sent: true, status: resp.StatusCode, header: resp.Header}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	switch {
	case err != nil:
		// The status line arrived but the answer did not: for a charge, the
		// charge object that says what happened is lost, so this is as
		// unknown as no answer at all.
		ex.failed, ex.detail = transportOutcome(ctx, err), "reading the response: "+err.Error()
	case len(body) > maxResponseBytes:
		ex.failed, ex.detail = ContractViolation, fmt.Sprintf("response body exceeds %d bytes", maxResponseBytes)
	default:
		ex.body = body
	}
	return ex
}

// transportOutcome reads an error of the HTTP client. A deadline, whether the
// caller's context or the client's Timeout, is a Timeout; so is the caller
// cancelling, because either way we stopped listening to a request that may
// have arrived. Anything else is a connection that failed under us.
func transportOutcome(ctx context.Context, err error) Outcome {
	var netErr net.Error
	switch {
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Timeout
	case errors.As(err, &netErr) && netErr.Timeout():
		return Timeout
	}
	return TransportError
}

// dialFailed reports whether err is a failure to open the connection
// (refused, unreachable, no such host, or a connect timeout): then not a
// byte of the request left, and the provider cannot have seen it. A failure
// on a connection that was open, even one reused from an earlier request,
// may come after the request was written.
func dialFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// statusOutcome reads the statuses that mean the same on every endpoint. The
// endpoints read their own success and error statuses before falling back to
// it; anything it does not know is a ContractViolation.
func statusOutcome(status int) Outcome {
	switch status {
	case http.StatusBadRequest:
		return InvalidRequest
	case http.StatusTooManyRequests:
		return RateLimited
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return Unavailable
	}
	return ContractViolation
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110, section 10.2.3). A date in the past means "now". Values beyond
// maxRetryAfter are capped. ok is false when the value is neither form.
func parseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value != "" && strings.Trim(value, "0123456789") == "" {
		secs, err := strconv.ParseInt(value, 10, 64)
		if err != nil || secs > int64(maxRetryAfter/time.Second) {
			// Only overflow fails here, and an overflowing delay is absurd.
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), maxRetryAfter), true
}

// retryAfter reads the Retry-After header of a response. An unreadable value
// is ignored, as if absent, and reported in the returned note for the logs:
// the status alone already says whether to retry.
func retryAfter(header http.Header, now time.Time) (d time.Duration, note string) {
	value := header.Get("Retry-After")
	if value == "" {
		return 0, ""
	}
	d, ok := parseRetryAfter(value, now)
	if !ok {
		return 0, fmt.Sprintf("ignored unreadable Retry-After %q", value)
	}
	return d, ""
}

// joinNote appends a note, if any, to a detail for the logs.
func joinNote(detail, note string) string {
	switch {
	case note == "":
		return detail
	case detail == "":
		return note
	}
	return detail + "; " + note
}
