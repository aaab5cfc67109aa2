package fakeprovider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The benchmarks call the handler directly, so that they measure the
// provider rather than the loopback network stack.

func benchPost(b *testing.B, p *Provider, key, body string) int {
	return benchPostTo(b, p, "/v1/charges", key, body)
}

func benchPostTo(b *testing.B, p *Provider, path, key, body string) int {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", sfString(key))
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	return rec.Code
}

func BenchmarkPostCharge(b *testing.B) {
	for _, storage := range []struct {
		suffix   string
		dataFile bool
	}{
		{"", false},
		{" with data file", true},
	} {
		b.Run("new key"+storage.suffix, func(b *testing.B) {
			p := benchProvider(b, storage.dataFile)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if code := benchPost(b, p, "key-"+strconv.Itoa(i), validBody); code != http.StatusCreated {
					b.Fatalf("status %d", code)
				}
			}
		})
		b.Run("replay"+storage.suffix, func(b *testing.B) {
			p := benchProvider(b, storage.dataFile)
			require.Equal(b, http.StatusCreated, benchPost(b, p, "key", validBody))
			b.ReportAllocs()
			for b.Loop() {
				if code := benchPost(b, p, "key", validBody); code != http.StatusCreated {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}

func BenchmarkPostRefund(b *testing.B) {
	p := benchProvider(b, false)
	require.Equal(b, http.StatusCreated, benchPost(b, p, "charge", chargeBody(99999999, "tok_visa", "order")))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key := "refund-" + strconv.Itoa(i)
		if code := benchPostTo(b, p, refundPath, key, refundBody("ch_000001", 1, key)); code != http.StatusCreated {
			b.Fatalf("status %d", code)
		}
	}
}

// BenchmarkReport writes the report of a day of 10,000 charges and 1,000
// refunds.
func BenchmarkReport(b *testing.B) {
	p := benchProvider(b, false)
	for i := range 10000 {
		require.Equal(b, http.StatusCreated, benchPost(b, p, fmt.Sprint("c", i), chargeBody(10000, "tok_visa", fmt.Sprint("order-", i))))
	}
	for i := range 1000 {
		require.Equal(b, http.StatusCreated, benchPostTo(b, p, refundPath, fmt.Sprint("r", i), refundBody(fmt.Sprintf("ch_%06d", i+1), 2500, fmt.Sprint("refund-", i))))
	}
	date := time.Now().UTC().Format(time.DateOnly)
	b.ReportAllocs()
	for b.Loop() {
		if n := len(p.Report(date)); n != 11000 {
			b.Fatalf("%d lines", n)
		}
	}
}

// benchProvider is a provider in memory, or on a new data file.
func benchProvider(b *testing.B, dataFile bool) *Provider {
	var cfg Config
	if dataFile {
		cfg.DataFile = filepath.Join(b.TempDir(), "fakeprovider.db")
	}
	p, err := New(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, p.CloseDataFile()) })
	return p
}

func BenchmarkListChargesByReference(b *testing.B) {
	for _, stored := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("charges=%d", stored), func(b *testing.B) {
			// A lookup rate that no benchmark reaches, so that every
			// lookup is served and the limiter's cost is measured too.
			p, err := New(Config{LookupRate: 1e9})
			require.NoError(b, err)
			for i := range stored {
				body := chargeBody(100, "tok_visa", fmt.Sprintf("ref-%06d", i))
				require.Equal(b, http.StatusCreated, benchPost(b, p, fmt.Sprintf("key-%06d", i), body))
			}
			require.Len(b, p.Charges(), stored)
			path := fmt.Sprintf("/v1/charges?merchant_reference=ref-%06d", stored/2)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

func BenchmarkParseKey(b *testing.B) {
	for name, header := range map[string]string{
		"quoted string": `"01a1d96c-e23d-77bf-801e-9df969c1d378"`,
		"bare token":    `order-1001`,
	} {
		b.Run(name, func(b *testing.B) {
			values := []string{header}
			b.ReportAllocs()
			for b.Loop() {
				if _, p := parseKey(values); p != nil {
					b.Fatal(p.Detail)
				}
			}
		})
	}
}

func BenchmarkFingerprint(b *testing.B) {
	r := chargeRequest{Amount: 54890, Currency: "TRY", Description: "Bookstore order 1001",
		MerchantReference: "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378", Source: "tok_visa"}
	b.ReportAllocs()
	for b.Loop() {
		if len(fingerprint("", r)) != 64 {
			b.Fatal("not a hex SHA-256")
		}
	}
}
