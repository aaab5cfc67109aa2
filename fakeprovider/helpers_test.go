package fakeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/syncbuf"
)

// testClock is a clock that moves only when told to.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gate stands in for time.After: every wait is announced on started, and all
// waits end together when the gate is opened.
type gate struct {
	started chan time.Duration
	open    chan time.Time
	once    sync.Once
}

func newGate() *gate {
	return &gate{started: make(chan time.Duration, 1024), open: make(chan time.Time)}
}

func (g *gate) After(d time.Duration) <-chan time.Time {
	g.started <- d
	return g.open
}

func (g *gate) Open() {
	g.once.Do(func() { close(g.open) })
}

// awaitWait blocks until some request waits on the gate.
func (g *gate) awaitWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-g.started:
		return d
	case <-time.After(5 * time.Second):
		require.FailNow(t, "nothing waited on the gate")
		return 0
	}
}

// fixture is a provider served over real HTTP on loopback.
type fixture struct {
	p      *Provider
	cfg    Config
	srv    *httptest.Server
	url    string
	client *http.Client
	clock  *testClock
	gate   *gate
	logs   *syncbuf.Buffer
}

// newFixture starts a provider with a test clock, a gate for its waits and
// JSON logs. cfg.Now, cfg.After and cfg.Logger are overwritten.
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	return startFixture(t, cfg, newTestClock())
}

func startFixture(t *testing.T, cfg Config, clock *testClock) *fixture {
	t.Helper()
	f := &fixture{clock: clock, gate: newGate(), logs: &syncbuf.Buffer{}}
	cfg.Now = f.clock.Now
	cfg.After = f.gate.After
	cfg.Logger = slog.New(slog.NewJSONHandler(f.logs, nil))
	p, err := New(cfg)
	require.NoError(t, err)
	f.p, f.cfg, f.srv = p, cfg, httptest.NewServer(p)
	f.url = f.srv.URL
	f.client = &http.Client{Timeout: 10 * time.Second}
	// Cleanups run last-in first-out: open the gate so slow charges finish,
	// drain the provider, stop the server, then close the data file. Each
	// step is harmless when stop did it already.
	t.Cleanup(func() { require.NoError(t, p.CloseDataFile()) })
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { f.drain(t) })
	t.Cleanup(f.gate.Open)
	return f
}

// drain closes the provider, waiting for the charges in progress.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, f.p.Close(ctx))
}

// restart shuts f down as the command does, then starts a provider with the
// same configuration and clock, on the same data file, with mode as
// Config.Mode: a zero mode keeps the file's.
func (f *fixture) restart(t *testing.T, mode Mode) *fixture {
	t.Helper()
	f.drain(t)
	f.srv.Close()
	require.NoError(t, f.p.CloseDataFile())
	cfg := f.cfg
	cfg.Mode = mode
	return startFixture(t, cfg, f.clock)
}

// call is one request to the fixture.
type call struct {
	method string
	path   string
	// key is the raw Idempotency-Key header value; empty sends no header.
	key  string
	body string
	// contentType defaults to application/json when there is a body.
	contentType string
	// noContentType sends a body without a Content-Type header.
	noContentType bool
	// auth is the Authorization header; empty sends none.
	auth string
}

// reply is what came back.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send performs c with client; it is safe to call from any goroutine.
func (f *fixture) send(ctx context.Context, client *http.Client, c call) (reply, error) {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, f.url+c.path, body)
	if err != nil {
		return reply{}, err
	}
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	switch {
	case c.noContentType:
	case c.contentType != "":
		req.Header.Set("Content-Type", c.contentType)
	case c.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do performs c and fails the test on a transport error.
func (f *fixture) do(t *testing.T, c call) reply {
	t.Helper()
	r, err := f.send(context.Background(), f.client, c)
	require.NoError(t, err)
	return r
}

// post is the call for POST /v1/charges with a key sent as a String.
func post(key, body string) call {
	return call{method: http.MethodPost, path: "/v1/charges", key: sfString(key), body: body}
}

func get(path string) call {
	return call{method: http.MethodGet, path: path}
}

func sfString(key string) string {
	return `"` + key + `"`
}

// chargeBody is a valid charge request body.
func chargeBody(amount int64, source, reference string) string {
	return fmt.Sprintf(`{"amount":%d,"currency":"TRY","source":%q,"description":"Bookstore order 1001","merchant_reference":%q}`,
		amount, source, reference)
}

const validBody = `{"amount":54890,"currency":"TRY","source":"tok_visa","description":"Bookstore order 1001","merchant_reference":"bookstore-1001-a"}`

// decode unmarshals a reply body, failing the test if it is not JSON of
// type T.
func decode[T any](t *testing.T, r reply) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

// requireProblem checks that r is a problem+json with the given status and
// detail, and returns it.
func requireProblem(t *testing.T, r reply, status int, detail string) problem {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, contentTypeProblem, r.header.Get("Content-Type"))
	p := decode[problem](t, r)
	require.Equal(t, status, p.Status)
	require.Equal(t, detail, p.Detail)
	require.NotEmpty(t, p.Title)
	require.Equal(t, problemTypeBase+string(p.Code), p.Type)
	return p
}

// sendWithAccept performs c with an Accept header.
func (f *fixture) sendWithAccept(c call, accept string) (reply, error) {
	req, err := http.NewRequest(c.method, f.url+c.path, nil)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Accept", accept)
	resp, err := f.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, err
}
