package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/internal/pgdb"
	"chargeonce/store"
)

// postgresURLEnv names the variable that enables the PostgreSQL half of the
// contract tests; .ci/postgres.sh prints it. The role needs CREATEDB: every
// test gets a database of its own.
const postgresURLEnv = "CHARGEONCE_TEST_POSTGRES_URL"

// migrations is how many migrations each dialect has, so how many rows
// schema_migrations holds once a database is up to date.
const migrations = 16

// backend is one implementation of store.Store under test.
type backend struct {
	name string
	// freshDSN returns the DSN of a new, empty database that is dropped
	// when the test ends.
	freshDSN func(t *testing.T) string
}

var backends = []backend{
	{name: "sqlite", freshDSN: freshSQLite},
	{name: "postgres", freshDSN: freshPostgres},
}

// eachBackend runs test against every implementation, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.freshDSN(t))
		})
	}
}

func freshSQLite(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "store.db")
}

func freshPostgres(t *testing.T) string {
	admin := os.Getenv(postgresURLEnv)
	if admin == "" {
		t.Skipf("PostgreSQL tests skipped: set %s (run .ci/postgres.sh as root to get one)", postgresURLEnv)
	}
	dsn, drop, err := pgdb.Fresh(context.Background(), admin, "chargeonce_test_")
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := drop(context.Background()); err != nil {
			t.Errorf("drop the test database: %v", err)
		}
	})
	return dsn
}

// rawExec runs SQL on the database behind the store's back, as a corrupt
// import or a careless operator would.
func rawExec(t *testing.T, dsn, query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer db.Close()
		_, err = db.ExecContext(ctx, query, args...)
		require.NoError(t, err)
		return
	}
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, query, args...)
	require.NoError(t, err)
}

// rawCount returns the single integer a query selects, read behind the store's back.
func rawCount(t *testing.T, dsn, query string, args ...any) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		require.NoError(t, err)
		defer db.Close()
		require.NoError(t, db.QueryRowContext(ctx, query, args...).Scan(&n))
		return n
	}
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	require.NoError(t, conn.QueryRow(ctx, query, args...).Scan(&n))
	return n
}

func openStore(t testing.TB, dsn string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// base is the clock of the tests: nanoseconds and a zone other than UTC, so
// that truncation to the microsecond and conversion to UTC both show.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("TRT", 3*60*60))

// stored is what the databases keep of a time.
func stored(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

var try = chargeonce.Money{Minor: 54890, Currency: "TRY"}

func newOrder(t testing.TB, s store.Store) store.Order {
	t.Helper()
	o, err := s.CreateOrder(context.Background(), try, "Collected works")
	require.NoError(t, err)
	return o
}

func newKey(t testing.TB) string {
	t.Helper()
	k, err := uuid.NewV7()
	require.NoError(t, err)
	return k.String()
}

func card(name string) string { return chargeonce.LegacyCardHash("tok_" + name) }

func newAttempt(t testing.TB, orderID int64, cardHash string, now time.Time) store.NewAttempt {
	return store.NewAttempt{
		OrderID:         orderID,
		CardHash:        cardHash,
		Key:             newKey(t),
		ReferencePrefix: "bookstore",
		Now:             now,
		AbandonAfter:    30 * time.Minute,
		Provider:        chargeonce.DefaultProvider,
	}
}

// checkout runs GetOrStartAttempt with a fresh key, as the checkout does.
func checkout(t testing.TB, s store.Store, orderID int64, cardHash string, now time.Time) (store.Attempt, store.Decision) {
	t.Helper()
	_, a, d, err := s.GetOrStartAttempt(context.Background(), newAttempt(t, orderID, cardHash, now))
	require.NoError(t, err)
	return a, d
}

func settle(t *testing.T, s store.Store, key string, status chargeonce.AttemptStatus, paymentID string) bool {
	t.Helper()
	settled, err := s.SettleAttempt(context.Background(), key, status, paymentID, base.Add(time.Minute))
	require.NoError(t, err)
	return settled.Changed
}

func getOrder(t *testing.T, s store.Store, id int64) (store.Order, []store.Attempt) {
	t.Helper()
	o, attempts, err := s.GetOrder(context.Background(), id)
	require.NoError(t, err)
	return o, attempts
}

func keys(attempts []store.Attempt) []string {
	ks := make([]string, len(attempts))
	for i, a := range attempts {
		ks[i] = a.Key
	}
	return ks
}

func TestMain(m *testing.M) {
	if os.Getenv(postgresURLEnv) == "" {
		fmt.Printf("store: PostgreSQL contract tests skipped: %s is not set\n", postgresURLEnv)
	}
	os.Exit(m.Run())
}

// logRequest lists r in the request log of op's intents and writes its
// end, as an activity does around a request that went out, and returns its
// number in the log.
func logRequest(t testing.TB, s store.Store, op chargeonce.Operation, r chargeonce.ProviderRequest) int {
	t.Helper()
	ctx := context.Background()
	requests, err := s.Requests(op)
	require.NoError(t, err)
	lr, err := requests.Begin(ctx, r.Key, r.At)
	require.NoError(t, err)
	require.NoError(t, requests.End(ctx, lr, r))
	return lr.N
}
