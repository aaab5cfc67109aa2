package activities_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/internal/pgdb"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// BenchmarkSettlement downloads a report of n charge lines and n/10 refund
// lines and matches it against n succeeded attempts and n/10 succeeded
// refunds of the day, on each database. It reports the time of one
// settlement and the peak of the live heap above what it was before,
// sampled every millisecond: the report is streamed and matched in pages,
// so the peak must not grow with n.
//
//	go test ./activities -run '^$' -bench BenchmarkSettlement -benchtime 1x
//
// The PostgreSQL half needs CHARGEONCE_TEST_POSTGRES_URL (.ci/postgres.sh).
func BenchmarkSettlement(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%d", db, n), func(b *testing.B) {
				dsn := benchDatabase(b, db)
				seedPaidDay(b, dsn, n)
				report := writeReport(b, n)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/csv")
					http.ServeFile(w, r, report)
				}))
				b.Cleanup(srv.Close)
				st, err := store.Open(context.Background(), dsn)
				require.NoError(b, err)
				b.Cleanup(func() { _ = st.Close() })
				s := &activities.Settlement{
					Reports:   map[string]*settlement.Client{chargeonce.DefaultProvider: {BaseURL: srv.URL, HTTP: srv.Client()}},
					Default:   chargeonce.DefaultProvider,
					Store:     st,
					GraceDays: 2,
					Now:       func() time.Time { return noon.AddDate(0, 0, 10) },
					Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
				}
				var suite testsuite.WorkflowTestSuite
				suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
				aenv := suite.NewTestActivityEnvironment()
				aenv.RegisterActivity(s)

				var peak uint64
				b.ResetTimer()
				for i := range b.N {
					runtime.GC()
					stop := watchHeap()
					_, err := aenv.ExecuteActivity(settleActs.StageReport, activities.StageReportInput{Date: settleDay})
					require.NoError(b, err)
					val, err := aenv.ExecuteActivity(settleActs.MatchReport, activities.MatchReportInput{Date: settleDay, RunID: fmt.Sprint("run-", i)})
					require.NoError(b, err)
					peak = max(peak, stop())
					var res activities.MatchReportResult
					require.NoError(b, val.Get(&res))
					require.Equal(b, n+n/refundEvery, res.Matched)
					require.Zero(b, res.Exceptions)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(n+n/refundEvery)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			})
		}
	}
}

// watchHeap samples the live heap until the function it returns is called,
// which returns the peak above the heap at the start.
func watchHeap() func() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if h := read(); h > base {
					peak = max(peak, h-base)
				}
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

func benchDatabase(b *testing.B, kind string) string {
	if kind == "sqlite" {
		return "sqlite:" + filepath.Join(b.TempDir(), "bench.db")
	}
	admin := os.Getenv("CHARGEONCE_TEST_POSTGRES_URL")
	if admin == "" {
		b.Skip("set CHARGEONCE_TEST_POSTGRES_URL (.ci/postgres.sh) for the PostgreSQL half")
	}
	dsn, drop, err := pgdb.Fresh(context.Background(), admin, "chargeonce_bench_")
	require.NoError(b, err)
	b.Cleanup(func() { _ = drop(context.Background()) })
	return dsn
}

// refundEvery is how many of the benchmark's paid orders have one refund:
// every tenth has a succeeded refund re_<i> of 1.00 TRY.
const refundEvery = 10

// seedPaidDay stores n paid orders of settleDay, each with its succeeded
// attempt for charge ch_<i>, and the refunds of every refundEvery-th, in
// bulk, behind the store's back.
func seedPaidDay(b *testing.B, dsn string, n int) {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn) // creates the schema
	require.NoError(b, err)
	require.NoError(b, st.Close())
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		require.NoError(b, err)
		defer db.Close()
		at := noon.Add(-time.Minute).UnixMicro()
		_, err = db.ExecContext(ctx, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $1)
			INSERT INTO orders (amount_minor, currency, description, status, provider_payment_id, created_at, updated_at)
			SELECT 1000 + i, 'TRY', 'bench', 'paid', printf('ch_%06d', i), $2, $2 FROM s`, n, at)
		require.NoError(b, err)
		_, err = db.ExecContext(ctx, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $1)
			INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
				status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at)
			SELECT printf('00000000-0000-7000-8000-%012d', i), 1000 + i, 1000 + i, 'TRY', $2, 'bench-' || i,
				'succeeded', printf('ch_%06d', i), 1, $3, $3, $3 FROM s`, n, strings.Repeat("a", 64), at)
		require.NoError(b, err)
		_, err = db.ExecContext(ctx, `WITH RECURSIVE s(i) AS (SELECT $2 UNION ALL SELECT i + $2 FROM s WHERE i + $2 <= $1)
			INSERT INTO refunds (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin, merchant_reference,
				status, provider_refund_id, workflow_started, created_at, settled_at)
			SELECT printf('00000000-0000-7000-9000-%012d', i), 1000 + i, printf('ch_%06d', i), 100, 'TRY', '', 'merchant',
				'bench-refund-' || i, 'succeeded', printf('re_%06d', i), 1, $3, $3 FROM s`, n, refundEvery, at)
		require.NoError(b, err)
		return
	}
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(b, err)
	defer conn.Close(ctx)
	at := noon.Add(-time.Minute)
	_, err = conn.Exec(ctx, `INSERT INTO orders (amount_minor, currency, description, status, provider_payment_id, created_at, updated_at)
		SELECT 1000 + i, 'TRY', 'bench', 'paid', 'ch_' || lpad(i::text, 6, '0'), $2, $2 FROM generate_series(1, $1::int) i`, n, at)
	require.NoError(b, err)
	_, err = conn.Exec(ctx, `INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, merchant_reference,
			status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at)
		SELECT '00000000-0000-7000-8000-' || lpad(i::text, 12, '0'), 1000 + i, 1000 + i, 'TRY', $2, 'bench-' || i,
			'succeeded', 'ch_' || lpad(i::text, 6, '0'), true, $3, $3, $3 FROM generate_series(1, $1::int) i`, n, strings.Repeat("a", 64), at)
	require.NoError(b, err)
	_, err = conn.Exec(ctx, `INSERT INTO refunds (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin,
			merchant_reference, status, provider_refund_id, workflow_started, created_at, settled_at)
		SELECT '00000000-0000-7000-9000-' || lpad(i::text, 12, '0'), 1000 + i, 'ch_' || lpad(i::text, 6, '0'), 100, 'TRY', '',
			'merchant', 'bench-refund-' || i, 'succeeded', 're_' || lpad(i::text, 6, '0'), true, $3, $3
		FROM generate_series($2::int, $1::int, $2::int) i`, n, refundEvery, at)
	require.NoError(b, err)
}

// writeReport writes the honest report of the seeded day, charges and
// refunds, in an order other than the charge ids', as a provider's is.
func writeReport(b *testing.B, n int) string {
	path := filepath.Join(b.TempDir(), "report.csv")
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	buf := bufio.NewWriter(f)
	w, err := settlement.NewWriter(buf)
	require.NoError(b, err)
	for k := range n {
		// A stride coprime with n visits every i once, out of order.
		i := (k*7919)%n + 1
		amount := fmt.Sprintf("%d.%02d", (1000+i)/100, (1000+i)%100)
		require.NoError(b, w.Write(settlement.Record{BalanceTransactionID: fmt.Sprintf("txn_%06d", i), CreatedUTC: noon.Format(time.RFC3339),
			ChargeID: fmt.Sprintf("ch_%06d", i), MerchantReference: fmt.Sprint("bench-", i), ReportingCategory: "charge",
			Gross: amount, Fee: "0.00", Net: amount, Currency: "TRY"}))
		if i%refundEvery == 0 {
			require.NoError(b, w.Write(settlement.Record{BalanceTransactionID: fmt.Sprintf("txn_re_%06d", i), CreatedUTC: noon.Format(time.RFC3339),
				ChargeID: fmt.Sprintf("ch_%06d", i), MerchantReference: fmt.Sprint("bench-refund-", i), ReportingCategory: "refund",
				Gross: "-1.00", Fee: "0.00", Net: "-1.00", Currency: "TRY", RefundID: fmt.Sprintf("re_%06d", i)}))
		}
	}
	require.NoError(b, w.Flush())
	require.NoError(b, buf.Flush())
	return path
}
