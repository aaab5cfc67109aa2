package settlement

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrUnreadable is wrapped by the errors of Open that asking again will not
// cure: the provider refused the request (a 4xx other than 429), or what it
// sent is not a report.
var ErrUnreadable = errors.New("settlement report cannot be read")

// Client downloads reports from the provider's GET /v1/settlements/{date}.
type Client struct {
	// BaseURL is the provider's root, such as "https://api.provider.example".
	BaseURL string
	// HTTP sends the requests. A report is long: bound each download with
	// the context, and give the client a Timeout no shorter than the
	// longest download, as a backstop for a context without a deadline
	// (the worker gives it the settlement activity's timeout).
	HTTP *http.Client
}

// Report is a downloaded report being read. Close it.
type Report struct {
	*Reader
	body io.ReadCloser
}

// Close releases the download.
func (r *Report) Close() error {
	return r.body.Close()
}

// maxProblemBytes bounds how much of an error answer is quoted.
const maxProblemBytes = 512

// Open asks for the report of date and returns it once its header has been
// read; the lines are read from the connection as Next asks for them.
func (c *Client) Open(ctx context.Context, date string) (*Report, error) {
	if _, err := ParseDate(date); err != nil {
		return nil, fmt.Errorf("settlement: %w", err)
	}
	if c.BaseURL == "" || c.HTTP == nil {
		return nil, errors.New("settlement: the client needs a base URL and an HTTP client")
	}
	u, err := url.JoinPath(c.BaseURL, "v1", "settlements", date)
	if err != nil {
		return nil, fmt.Errorf("settlement: base URL %q: %w", c.BaseURL, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("settlement: %w", err)
	}
	req.Header.Set("Accept", "text/csv")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("settlement: report of %s: %w", date, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBytes))
		return nil, &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		resp.Body.Close()
		return nil, fmt.Errorf("settlement: report of %s: content type %q is not text/csv: %w", date, ct, ErrUnreadable)
	}
	r, err := NewReader(resp.Body)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("settlement: report of %s: %w: %w", date, ErrUnreadable, err)
	}
	return &Report{Reader: r, body: resp.Body}, nil
}

// StatusError is an answer other than 200 to a report download.
type StatusError struct {
	Status int
	// Body is the start of the answer, for the log.
	Body string
}

// Unwrap makes a refusal ErrUnreadable.
func (e *StatusError) Unwrap() error {
	if e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests {
		return ErrUnreadable
	}
	return nil
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("settlement: the provider answered %d: %s", e.Status, e.Body)
}
