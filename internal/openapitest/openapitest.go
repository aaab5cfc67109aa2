// Package openapitest checks HTTP exchanges with the checkout API against
// its OpenAPI document (docs/openapi.json, the one owner of the wire
// format): Handler wraps the API's handler in a test, Transport wraps a
// client's transport. Each fails the test, with the validator's messages,
// on a request or an answer that the document does not allow: an
// undeclared status, content type, header or field, a missing required
// field, a value of the wrong type or form. The exchange itself goes on
// untouched, so the test's own assertions run too.
//
// A test that sends a request the document forbids on purpose (a bad-input
// test) marks it with ResponsesOnly: its request is not checked, and its
// answer still is. An answer to a method or path that the document lacks
// must be the problem the API gives every such request (404, 405 with an
// Allow header, or 401 before routing) and is checked as that.
package openapitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/router"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"chargeonce/docs"
)

// ResponsesOnlyHeader marks a request whose answer alone is checked. The
// wrappers remove it before the request goes on, so the API never sees it.
const ResponsesOnlyHeader = "X-Openapitest-Responses-Only"

// ResponsesOnly marks req as one that the document forbids on purpose:
// its answer is checked, the request is not. It returns req.
func ResponsesOnly(req *http.Request) *http.Request {
	req.Header.Set(ResponsesOnlyHeader, "1")
	return req
}

// checker holds the validator of docs.OpenAPI, built once per test binary:
// building it parses the whole document.
type checker struct {
	// mu serializes the validator, whose caches are filled as it goes.
	mu        sync.Mutex
	validator validator.Validator
	router    router.Router
	problem   *base.Schema
	schemas   schema_validation.SchemaValidator
}

var (
	loadOnce sync.Once
	loaded   *checker
	loadErr  error
)

// load parses docs.OpenAPI into a checker.
func load() (*checker, error) {
	loadOnce.Do(func() {
		loaded, loadErr = newChecker(docs.OpenAPI)
	})
	return loaded, loadErr
}

func newChecker(spec []byte) (*checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("openapitest: parse the OpenAPI document: %w", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapitest: build the OpenAPI model: %w", err)
	}
	problem := model.Model.Components.Schemas.GetOrZero("Problem")
	if problem == nil {
		return nil, errors.New("openapitest: the OpenAPI document has no Problem schema")
	}
	return &checker{
		validator: validator.NewValidatorFromV3Model(&model.Model, config.WithFormatAssertions()),
		router:    router.NewRouter(&model.Model, router.WithPathOnlyMatching()),
		problem:   problem.Schema(),
		schemas:   schema_validation.NewSchemaValidator(config.WithFormatAssertions()),
	}, nil
}

// exchange is one request and its answer, with their bodies read.
type exchange struct {
	req           *http.Request
	reqBody       []byte
	responsesOnly bool
}

// newExchange reads req's body and takes off the ResponsesOnly mark; req
// can be sent on afterwards.
func newExchange(req *http.Request) (*exchange, error) {
	x := &exchange{req: req, responsesOnly: req.Header.Get(ResponsesOnlyHeader) != ""}
	req.Header.Del(ResponsesOnlyHeader)
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		x.reqBody = body
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return x, nil
}

// request is a copy of the request with a fresh reader of its body, for
// the validator, which reads it.
func (x *exchange) request() *http.Request {
	r := x.req.Clone(x.req.Context())
	r.Body = io.NopCloser(bytes.NewReader(x.reqBody))
	r.ContentLength = int64(len(x.reqBody))
	return r
}

// check validates the exchange and returns one message per violation.
func (c *checker) check(x *exchange, resp *http.Response, respBody []byte) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var msgs []string
	if _, err := c.router.FindRoute(x.request()); err != nil {
		if !x.responsesOnly {
			msgs = append(msgs, "request: "+err.Error()+": the document has no such operation")
		}
		return append(msgs, c.checkUnrouted(resp, respBody)...)
	}
	if !x.responsesOnly {
		if ok, errs := c.validator.ValidateHttpRequestSync(x.request()); !ok {
			msgs = append(msgs, describe("request", errs)...)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if ok, errs := c.validator.ValidateHttpResponse(x.request(), resp); !ok {
		msgs = append(msgs, describe("response", errs)...)
	}
	return msgs
}

// checkUnrouted checks the answer to a method or path the document lacks:
// the API answers such a request, before any route, with a 401 (no key),
// a 404 or a 405 problem (docs/openapi.json's info says so).
func (c *checker) checkUnrouted(resp *http.Response, body []byte) []string {
	var msgs []string
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if resp.Header.Get("WWW-Authenticate") == "" {
			msgs = append(msgs, "response: a 401 without a WWW-Authenticate header")
		}
	case http.StatusNotFound:
	case http.StatusMethodNotAllowed:
		if resp.Header.Get("Allow") == "" {
			msgs = append(msgs, "response: a 405 without an Allow header")
		}
	default:
		return append(msgs, fmt.Sprintf("response: status %d to a method or path the document lacks, where only 401, 404 or 405 are answered", resp.StatusCode))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		msgs = append(msgs, fmt.Sprintf("response: a %d of Content-Type %q, not application/problem+json", resp.StatusCode, ct))
	}
	if ok, errs := c.schemas.ValidateSchemaBytesWithVersion(c.problem, body, 3.1); !ok {
		msgs = append(msgs, describe("response: the Problem", errs)...)
	}
	return msgs
}

// describe turns the validator's errors into messages that say what broke
// which rule, down to each field.
func describe(what string, errs []*verrors.ValidationError) []string {
	var msgs []string
	for _, e := range errs {
		msg := what + ": " + e.Message
		if e.Reason != "" && e.Reason != e.Message {
			msg += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			msg += "\n\t" + f.Error()
		}
		msgs = append(msgs, msg)
	}
	return msgs
}

// report fails t with msgs, about the exchange of req.
func report(t testing.TB, req *http.Request, msgs []string) {
	t.Helper()
	if len(msgs) > 0 {
		t.Errorf("openapitest: %s %s does not follow docs/openapi.json:\n%s", req.Method, req.URL.RequestURI(), strings.Join(msgs, "\n"))
	}
}

// Handler returns h wrapped so that every request it serves, and each
// answer, is checked against docs/openapi.json; a violation fails t.
func Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	c, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x, err := newExchange(r)
		if err != nil {
			t.Errorf("openapitest: read the request body of %s %s: %v", r.Method, r.URL.RequestURI(), err)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		resp := rec.Result()
		body := rec.Body.Bytes()
		report(t, r, c.check(x, resp, body))
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// Transport returns rt wrapped so that every request it sends, and each
// answer, is checked against docs/openapi.json; a violation fails t. A nil
// rt is http.DefaultTransport.
func Transport(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	t.Helper()
	c, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		// A RoundTripper must not change the caller's request.
		req = req.Clone(req.Context())
		x, err := newExchange(req)
		if err != nil {
			return nil, err
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		report(t, req, c.check(x, resp, body))
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
