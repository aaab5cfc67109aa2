package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"chargeonce/internal/apikey"
	"chargeonce/store"
)

// BenchmarkAuthenticate measures what authenticating one request costs: the
// key's lookup in a SQLite merchant database, its hash and the scope check.
// It reports the median (p50-ns) besides the mean (ns/op).
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "chargeonce.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	key, rec, err := apikey.New("bench", []apikey.Scope{apikey.ScopeCheckout}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := st.CreateAPIKey(ctx, rec); err != nil {
		b.Fatal(err)
	}
	s := &server{store: st, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }
	h := s.authenticate(s.require(apikey.ScopeCheckout, ok))
	req := httptest.NewRequest(http.MethodGet, "/api/orders/1001", nil)
	req.Header.Set("Authorization", "Bearer "+key.String())
	req, _ = withRequestInfo(req)

	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, req)
		took = append(took, time.Since(start))
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
}
