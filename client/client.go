// Package client is the Go client of chargeonce's checkout API
// (docs/checkout-api.md, docs/openapi.json), for a merchant's backend.
//
// A Client sends each call as one HTTP request and reads its answer into the
// API's own wire types (package chargeonce/api/wire). An answer the API
// gives as an error, such as a declined card, comes back as a *Problem,
// with the problem type to branch on and the Retry-After to wait; an answer
// that is not the JSON the API promises comes back as an *AnswerError; a
// request that never reached the API comes back as the transport's error,
// naming the address tried.
//
//	api := client.New("https://pay.example.com", os.Getenv("CHARGEONCE_API_KEY"))
//	order, err := api.CreateOrder(ctx, "548.90", "TRY", "order 1001")
//	...
//	res, err := api.Checkout(ctx, order.ID, "tok_visa")
//	var p *client.Problem
//	if errors.As(err, &p) && p.Type == wire.ProblemCardDeclined { ... }
//
// Example shows the whole branch on a checkout's answer.
//
// The client retries nothing by itself: whether a request may be sent
// again is the API's contract (a checkout of the same order, or a refund
// under the same Idempotency-Key, may always be), and the caller's choice.
//
// It links nothing of the server: the standard library, the wire types and
// a UUID generator.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"chargeonce/api/wire"
)

// DefaultTimeout bounds one exchange with the API when New is given no
// *http.Client. The API answers a checkout or a refund within its charge
// budget (seconds), and a settlement run within a minute; a call that
// takes longer than this is stuck somewhere on the way.
const DefaultTimeout = 2 * time.Minute

// MaxAnswerBytes is the most of an answer's body that the client reads.
// The API's largest answers (a settlement, a page of deliveries) are well
// under it; a larger one is refused as an *AnswerError, not truncated.
const MaxAnswerBytes = 4 << 20

// userAgent names the client in the API's request log.
const userAgent = "chargeonce-go-client"

// Client calls the checkout API. It is safe for concurrent use.
type Client struct {
	base string
	key  string
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests through hc instead of a client with
// DefaultTimeout: to set another timeout, a proxy, TLS settings, or a
// transport that records or checks the exchanges.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// New returns a client of the API at baseURL, an absolute http or https
// URL such as "https://pay.example.com" (a trailing slash is dropped), that
// authenticates with apiKey as a bearer token. An empty apiKey sends none:
// only GET /healthz answers without one.
//
// The key's scopes decide which calls it may make (docs/checkout-api.md,
// "Authentication"): checkout for orders, checkouts and their events,
// refund for refunds, operator for charges, settlements and their
// exceptions, webhook endpoints and the audit log. A call outside them is a *Problem of type
// wire.ProblemForbidden.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	return c
}

// BaseURL is the API's address, as requests are sent to it.
func (c *Client) BaseURL() string { return c.base }

// Problem is an error answer of the API: an RFC 9457 problem details
// object (wire.Problem: Status, Type, Title, Detail, and DeclineCode or
// OrderID where they apply), with the headers that say what to do next.
//
// Branch on Type, which names what went wrong (wire.ProblemCardDeclined,
// wire.ProblemProviderUnavailable, …); Title and Detail are for people. Every
// problem of the API has a Type; an empty one is RFC 9457's "about:blank",
// which says no more than the status.
type Problem struct {
	wire.Problem
	// RetryAfter is how long the API asks the client to wait before it
	// sends the request again, from the Retry-After header; zero when the
	// answer has none.
	RetryAfter time.Duration
	// Replayed is set when the API answered a refund request from the
	// first request with the same Idempotency-Key (Idempotent-Replayed).
	Replayed bool
}

// Error reads as the title, the detail and the status, such as "The card
// was declined. insufficient funds (HTTP 402)".
func (p *Problem) Error() string {
	msg := p.Title
	if msg == "" {
		msg = http.StatusText(p.Status)
	}
	if p.Detail != "" {
		msg += " " + p.Detail
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, p.Status)
}

// AnswerError is an answer that is not what the API promises: a body that
// is not JSON, or not the JSON expected, or an error status without a
// problem body, as a proxy in front of the API may send. Nothing in it can
// be relied on but the status.
type AnswerError struct {
	// Request is the method and path asked, such as "POST /api/orders".
	Request string
	// Status is the answer's HTTP status.
	Status int
	// ContentType is the answer's Content-Type header.
	ContentType string
	// Err is why the body could not be read.
	Err error
}

func (e *AnswerError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Sprintf("the API answered %s with HTTP %d and %s, not the JSON expected: %v", e.Request, e.Status, ct, e.Err)
}

func (e *AnswerError) Unwrap() error { return e.Err }

// HTTPStatus is the HTTP status of the answer that err reports, a *Problem
// or an *AnswerError; 0 when the request got no answer.
func HTTPStatus(err error) int {
	var p *Problem
	if errors.As(err, &p) {
		return p.Status
	}
	var a *AnswerError
	if errors.As(err, &a) {
		return a.Status
	}
	return 0
}

// answer is what call keeps of a successful answer besides its body.
type answer struct {
	status int
	header http.Header
}

// byStatus is the out of a call whose answers have a body of their own for
// each status.
type byStatus map[int]any

// call sends one request with body as JSON (none when body is nil) and the
// extra header, and decodes a 2xx answer into out (ignored when nil; a byStatus picks it by the
// status). An
// error status is a *Problem, or an *AnswerError when its body is not a
// problem; a 2xx status whose body is not out's JSON is an *AnswerError.
func (c *Client) call(ctx context.Context, method, path string, body any, header http.Header, out any) (answer, error) {
	var reqBody io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, fmt.Errorf("encode the request body of %s %s: %w", method, path, err)
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reqBody)
	if err != nil {
		return answer{}, fmt.Errorf("build the request %s %s: %w", method, c.base+path, err)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The *url.Error repeats the method and the whole URL; its cause
		// is what to tell.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return answer{}, fmt.Errorf("cannot reach the checkout API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	asked := method + " " + path
	answerErr := func(err error) *AnswerError {
		return &AnswerError{Request: asked, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Err: err}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	switch {
	case err != nil:
		return answer{}, answerErr(fmt.Errorf("read the body: %w", err))
	case len(data) > MaxAnswerBytes:
		return answer{}, answerErr(fmt.Errorf("the body is larger than %d bytes", MaxAnswerBytes))
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return answer{}, readProblem(resp, data, answerErr)
	}
	if pick, ok := out.(byStatus); ok {
		if out, ok = pick[resp.StatusCode]; !ok {
			return answer{}, answerErr(errors.New("the status is not one this request is answered with"))
		}
	}
	if out != nil {
		if err := decodeJSON(resp.Header, data, "application/json", out); err != nil {
			return answer{}, answerErr(err)
		}
	}
	return answer{status: resp.StatusCode, header: resp.Header}, nil
}

// readProblem reads an error answer as a *Problem, or an *AnswerError when
// it is not one.
func readProblem(resp *http.Response, data []byte, answerErr func(error) *AnswerError) error {
	p := &Problem{Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if err := decodeJSON(resp.Header, data, "application/problem+json", &p.Problem); err != nil {
		return answerErr(err)
	}
	// The status line is what happened; a body that says otherwise is not
	// trusted over it.
	p.Status = resp.StatusCode
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil && secs > 0 {
			p.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return p
}

// decodeJSON decodes data into out when the Content-Type is want.
func decodeJSON(h http.Header, data []byte, want string, out any) error {
	media, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || media != want {
		return fmt.Errorf("the content type is not %s", want)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode the body: %w", err)
	}
	return nil
}

// orderPath is the path of an order, or of what follows it when more is
// given.
func orderPath(id int64, more ...string) string {
	return "/api/orders/" + strconv.FormatInt(id, 10) + strings.Join(more, "")
}

// Health reads GET /healthz: the API answers and its database does. A
// database that does not answer is a *Problem of type
// wire.ProblemUnavailable (503). It needs no API key.
func (c *Client) Health(ctx context.Context) (wire.Health, error) {
	var h wire.Health
	_, err := c.call(ctx, http.MethodGet, "/healthz", nil, nil, &h)
	return h, err
}
