package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"chargeonce/api/wire"
)

// requestTimeout bounds one exchange with the API. A checkout answers within
// the server's checkout budget, well under this.
const requestTimeout = 2 * time.Minute

// maxResponseBytes caps what is read from the API.
const maxResponseBytes = 1 << 20

// apiError is an error answer of the API.
type apiError struct {
	status  int
	problem wire.Problem
	// retryAfter is the answer's Retry-After, in seconds, when it has one.
	retryAfter string
}

func (e *apiError) Error() string {
	msg := e.problem.Title
	if msg == "" {
		msg = http.StatusText(e.status)
	}
	if e.problem.Detail != "" {
		msg += " " + e.problem.Detail
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.status)
}

// apiClient talks to the checkout API.
type apiClient struct {
	base string
	// key is the API key sent as a bearer token; empty sends none.
	key  string
	http *http.Client
}

func newAPIClient(base, key string) *apiClient {
	return &apiClient{base: base, key: key, http: &http.Client{Timeout: requestTimeout}}
}

// response is a non-error answer of the API.
type response struct {
	status int
	body   []byte
}

// do sends one request. A 4xx or 5xx answer is returned as *apiError, and a
// failure to reach the API says which address was tried.
func (c *apiClient) do(ctx context.Context, method, path string, body any) (response, error) {
	return c.doWith(ctx, method, path, body, nil)
}

// doWith is do with extra request headers, such as a refund's
// Idempotency-Key.
func (c *apiClient) doWith(ctx context.Context, method, path string, body any, header http.Header) (response, error) {
	var reqBody io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, fmt.Errorf("encode request: %w", err)
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reqBody)
	if err != nil {
		return response{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
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
		// The *url.Error repeats the method and URL; its cause is what to tell.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return response{}, fmt.Errorf("cannot reach the checkout API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return response{}, fmt.Errorf("read the answer of %s %s: %w", method, c.base+path, err)
	}
	if resp.StatusCode >= 400 {
		e := &apiError{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		// A body that is not problem+json still leaves the status to report.
		_ = json.Unmarshal(data, &e.problem)
		if resp.StatusCode == http.StatusUnauthorized && c.key == "" {
			e.problem.Detail += " (give one with --api-key or " + envAPIKey + ", or run where go run ./dev keeps " + devKeyFile + ")"
		}
		return response{}, e
	}
	return response{status: resp.StatusCode, body: data}, nil
}

// decode reads a JSON answer, saying which request it answered when it is
// not what the API promises.
func decode[T any](r response, what string) (T, error) {
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		return v, fmt.Errorf("the API answered %s with a body that is not the expected JSON: %w", what, err)
	}
	return v, nil
}

func (c *apiClient) createOrder(ctx context.Context, amount, currency, description string) (wire.Order, error) {
	r, err := c.do(ctx, http.MethodPost, "/api/orders", wire.CreateOrderRequest{
		Amount: &amount, Currency: &currency, Description: description,
	})
	if err != nil {
		return wire.Order{}, fmt.Errorf("create order: %w", err)
	}
	return decode[wire.Order](r, "order creation")
}

func (c *apiClient) getOrder(ctx context.Context, id int64) (wire.Order, error) {
	r, err := c.do(ctx, http.MethodGet, "/api/orders/"+strconv.FormatInt(id, 10), nil)
	if err != nil {
		return wire.Order{}, fmt.Errorf("order %d: %w", id, err)
	}
	return decode[wire.Order](r, "an order lookup")
}

// checkout posts the checkout. Besides errors, it answers 200 or 202.
func (c *apiClient) checkout(ctx context.Context, id int64, card string) (int, wire.CheckoutAnswer, error) {
	r, err := c.do(ctx, http.MethodPost, "/api/orders/"+strconv.FormatInt(id, 10)+"/checkout",
		wire.CheckoutRequest{CardToken: card})
	if err != nil {
		return 0, wire.CheckoutAnswer{}, err
	}
	a, err := decode[wire.CheckoutAnswer](r, "the checkout")
	return r.status, a, err
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
