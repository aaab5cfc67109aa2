// Package ietf is the provider adapter of the IETF draft's contract
// (docs/provider-http.md), over HTTP.
//
// It sends every charge, refund, capture and void with its Idempotency-Key
// as a Structured Field String and reads every response, or the lack of
// one, as a typed provider.Outcome, with one reading for all (post.go). A
// hold is a charge sent with "capture": false, captured or voided at
// /v1/charges/{id}/capture and /v1/charges/{id}/void (hold.go).
// It has no circuit breaker of its own: provider.Breaker stands in front of
// it, as of every adapter.
package ietf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"chargeonce/provider"
)

// maxResponseBytes bounds how much of a response body is read. The largest
// answer of the contract is a list of the charges of one merchant reference,
// a few hundred bytes each; a body beyond this is not the provider speaking
// the contract, and reading it whole would let a broken peer exhaust memory.
const maxResponseBytes = 1 << 20

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
}

// Client speaks the provider contract; it implements provider.Port. It is
// safe for concurrent use.
type Client struct {
	base *url.URL
	http *http.Client
}

var _ provider.Port = (*Client)(nil)

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	base, err := provider.CheckHTTP(cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("ietf: %w", err)
	}
	// A copy, so that the caller's client keeps its own redirect policy.
	hc := *cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{base: base, http: &hc}, nil
}

// exchange is one request to the provider as the request helper saw it.
type exchange struct {
	// sent is false when the request never left: the context had ended,
	// or no connection could be made. Otherwise it
	// may have reached the provider.
	sent bool
	// status is 0 when no response headers arrived.
	status   int
	header   http.Header
	body     []byte
	duration time.Duration
	// failed is set when no complete response was read: Timeout,
	// TransportError, or ContractViolation for an oversized body.
	failed provider.Outcome
	detail string
}

// send is the one request helper: it sends the request with the injected
// client and reads at most maxResponseBytes of the answer.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, header http.Header, body []byte) exchange {
	if err := ctx.Err(); err != nil {
		return exchange{failed: provider.Timeout, detail: "not sent: " + err.Error()}
	}
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return exchange{failed: provider.InvalidRequest, detail: "not sent: " + err.Error()}
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Accept", "application/json")
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
	return ex
}

func (c *Client) roundTrip(ctx context.Context, req *http.Request) exchange {
	resp, err := c.http.Do(req)
	if err != nil {
		return exchange{failed: provider.TransportOutcome(ctx, err), detail: err.Error(), sent: !provider.DialFailed(err)}
	}
	defer resp.Body.Close()
	ex := exchange{sent: true, status: resp.StatusCode, header: resp.Header}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	switch {
	case err != nil:
		// The status line arrived but the answer did not: for a charge, the
		// charge object that says what happened is lost, so this is as
		// unknown as no answer at all.
		ex.failed, ex.detail = provider.TransportOutcome(ctx, err), "reading the response: "+err.Error()
	case len(body) > maxResponseBytes:
		ex.failed, ex.detail = provider.ContractViolation, fmt.Sprintf("response body exceeds %d bytes", maxResponseBytes)
	default:
		ex.body = body
	}
	return ex
}

// statusOutcome reads the statuses that mean the same on every endpoint. The
// endpoints read their own success and error statuses before falling back to
// it; anything it does not know is a ContractViolation.
func statusOutcome(status int) provider.Outcome {
	switch status {
	case http.StatusBadRequest:
		return provider.InvalidRequest
	case http.StatusNotFound:
		// The contract answers 404 only for an id it does not have.
		return provider.NotFound
	case http.StatusTooManyRequests:
		return provider.RateLimited
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return provider.Unavailable
	}
	return provider.ContractViolation
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date
// (RFC 9110, section 10.2.3). A date in the past means "now". Values beyond
// provider.MaxRetryAfter are capped. ok is false when the value is neither form.
func parseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.TrimSpace(value)
	if value != "" && strings.Trim(value, "0123456789") == "" {
		secs, err := strconv.ParseInt(value, 10, 64)
		if err != nil || secs > int64(provider.MaxRetryAfter/time.Second) {
			// Only overflow fails here, and an overflowing delay is absurd.
			return provider.MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), provider.MaxRetryAfter), true
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
