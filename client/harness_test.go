package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	temporal "go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/client"
	"chargeonce/internal/apikey"
	"chargeonce/internal/backend"
	"chargeonce/internal/openapitest"
	"chargeonce/notify"
	"chargeonce/store"
	"chargeonce/workflows"
)

// testAPI is the real API, as api.Build wires it, over a real SQLite store,
// with a Temporal client that is never dialled: everything these tests
// send is answered before a workflow would be started. The clients of its
// tests check every exchange against docs/openapi.json.
type testAPI struct {
	url   string
	store store.Store
}

// tb is what the harness needs of a test, so that the examples, which have
// no *testing.T, start the same API.
type tb interface {
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// startAPI starts the API on a fresh database. With published, the default
// timing is published, as the first worker's start would have; without it,
// the API answers checkouts as it does before any worker started.
func startAPI(t tb, published bool) *testAPI {
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			t.Fatalf("start the API: %v", err)
		}
	}
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	must(err)
	t.Cleanup(func() { _ = st.Close() })
	if published {
		timing, err := workflows.DefaultTiming().Encode()
		must(err)
		_, err = st.PublishTiming(ctx, timing, false)
		must(err)
	}
	// Nothing listens on port 1; a test that reached Temporal would fail.
	tc, err := temporal.NewLazyClient(temporal.Options{HostPort: "127.0.0.1:1"})
	must(err)
	t.Cleanup(tc.Close)
	hasher, err := chargeonce.ParseCardHashKey(chargeonce.NewCardHashKey())
	must(err)
	conn := &backend.Conn{Temporal: tc, Store: st, CardHasher: hasher, Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// The tests register endpoints on loopback, which a deployment allows
	// only by name.
	h, _, err := api.Build(ctx, conn, api.Settings{EventNetworks: notify.LoopbackNetworks})
	must(err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testAPI{url: srv.URL, store: st}
}

// key stores a new API key with these scopes, every scope when none is
// given, and returns it.
func (a *testAPI) key(t tb, scopes ...apikey.Scope) string {
	if len(scopes) == 0 {
		scopes = apikey.AllScopes()
	}
	key, rec, err := apikey.New("client test", scopes, time.Now())
	if err != nil {
		t.Fatalf("new API key: %v", err)
	}
	if err := a.store.CreateAPIKey(context.Background(), rec); err != nil {
		t.Fatalf("store the API key: %v", err)
	}
	return key.String()
}

// client is a client of the API with a key of these scopes (every scope
// when none is given). In a test, each of its requests and answers is
// checked against docs/openapi.json (openapitest.Transport).
func (a *testAPI) client(t tb, scopes ...apikey.Scope) *client.Client {
	return client.New(a.url, a.key(t, scopes...), client.WithHTTPClient(checkedHTTP(t, false)))
}

// badInputClient is client for requests that the document forbids on
// purpose: their answers alone are checked.
func (a *testAPI) badInputClient(t tb, scopes ...apikey.Scope) *client.Client {
	return client.New(a.url, a.key(t, scopes...), client.WithHTTPClient(checkedHTTP(t, true)))
}

// checkedHTTP is an HTTP client whose exchanges a test checks against the
// document, their answers alone when responsesOnly; an example's are not.
func checkedHTTP(t tb, responsesOnly bool) *http.Client {
	rt := http.DefaultTransport
	if tt, ok := t.(testing.TB); ok {
		rt = openapitest.Transport(tt, rt)
	}
	if responsesOnly {
		rt = markResponsesOnly{rt}
	}
	return &http.Client{Timeout: time.Minute, Transport: rt}
}

// markResponsesOnly marks each request as one whose answer alone is
// checked (openapitest.ResponsesOnly).
type markResponsesOnly struct{ next http.RoundTripper }

func (m markResponsesOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	return m.next.RoundTrip(openapitest.ResponsesOnly(req.Clone(req.Context())))
}
