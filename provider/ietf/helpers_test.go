package ietf_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
	"chargeonce/provider/ietf"
)

const testKey = "01a1d96c-e23d-77bf-801e-9df969c1d378"

func testCharge() provider.ChargeRequest {
	return provider.ChargeRequest{
		Key:               testKey,
		Amount:            54890,
		Currency:          "TRY",
		Source:            "tok_visa",
		Description:       "Bookstore order 1001",
		MerchantReference: "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",
	}
}

// chargeObject is the contract's charge object for testCharge, with changes
// applied, as a test server would send it.
func chargeObject(t testing.TB, change func(map[string]any)) string {
	req := testCharge()
	obj := map[string]any{
		"id": "ch_000001", "object": "charge", "amount": req.Amount, "currency": req.Currency,
		"status": "succeeded", "merchant_reference": req.MerchantReference,
		"idempotency_key": req.Key, "created": "2026-11-30T10:00:00Z",
	}
	if change != nil {
		change(obj)
	}
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

// reply is a canned answer of a test server.
type reply struct {
	status int
	header map[string]string
	body   string
}

func (rp reply) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if rp.header["Content-Type"] == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(rp.status)
	_, _ = w.Write([]byte(rp.body))
}

// server is a test provider that counts the requests it receives.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t testing.TB, h http.Handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// testConfig is the client's configuration with the breaker in front of it,
// as the worker runs it.
type testConfig struct {
	ietf.Config
	Breaker provider.BreakerConfig
	Logger  *slog.Logger
}

// newClient returns a client of baseURL with a short timeout, behind a
// breaker that stays closed unless a test configures one.
func newClient(t testing.TB, baseURL string, configure ...func(*testConfig)) provider.Port {
	t.Helper()
	cfg := testConfig{
		Config:  ietf.Config{BaseURL: baseURL, HTTPClient: &http.Client{Timeout: 5 * time.Second}},
		Breaker: provider.BreakerConfig{ConsecutiveFailures: 1000},
		Logger:  slog.New(slog.DiscardHandler),
	}
	for _, c := range configure {
		c(&cfg)
	}
	c, err := ietf.New(cfg.Config)
	require.NoError(t, err)
	b, err := provider.NewBreaker(c, cfg.Breaker, cfg.Logger)
	require.NoError(t, err)
	return b
}

// logBuffer collects log output from concurrent goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// blockUntilClientGivesUp is a provider that never answers. It reads the
// body first: only then does the server watch the connection and end the
// request's context when the client hangs up.
func blockUntilClientGivesUp(_ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// dropConnection is a provider whose connection breaks before it answers.
func dropConnection(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// An answer no test expects, so that the failure shows.
		http.Error(w, "hijack: "+err.Error(), 599)
		return
	}
	_ = conn.Close()
}
