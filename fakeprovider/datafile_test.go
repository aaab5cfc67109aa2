package fakeprovider

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newDurableFixture is a fixture on a new data file.
func newDurableFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	cfg.DataFile = filepath.Join(t.TempDir(), "fakeprovider.db")
	return newFixture(t, cfg)
}

func TestDataFile_ChargesAndKeysSurviveARestart(t *testing.T) {
	f := newDurableFixture(t, Config{})
	created := f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	declined := f.do(t, post("key-2", chargeBody(2000, "tok_chargeDeclined", "ref-1")))
	require.Equal(t, http.StatusCreated, created.status)
	require.Equal(t, http.StatusPaymentRequired, declined.status)
	charges := f.do(t, get("/_admin/charges"))

	f = f.restart(t, Mode{})

	for _, before := range []struct {
		key, body string
		first     reply
	}{
		{"key-1", chargeBody(1000, "tok_visa", "ref-1"), created},
		{"key-2", chargeBody(2000, "tok_chargeDeclined", "ref-1"), declined},
	} {
		replay := f.do(t, post(before.key, before.body))
		require.Equal(t, before.first.status, replay.status)
		require.Equal(t, before.first.header.Get("Content-Type"), replay.header.Get("Content-Type"))
		require.Equal(t, string(before.first.body), string(replay.body), "the stored response, byte for byte")
		require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	}
	requireProblem(t, f.do(t, post("key-1", chargeBody(9999, "tok_visa", "ref-1"))), http.StatusUnprocessableEntity, msgKeyReused)
	require.Equal(t, string(charges.body), string(f.do(t, get("/_admin/charges")).body))
	byRef := f.do(t, get("/v1/charges?merchant_reference=ref-1"))
	require.Equal(t, []string{"ch_000001", "ch_000002"}, chargeIDs(decode[chargeList](t, byRef).Data))
	require.Equal(t, http.StatusOK, f.do(t, get("/v1/charges/ch_000002")).status)

	next := f.do(t, post("key-3", chargeBody(3000, "tok_visa", "ref-3")))
	require.Equal(t, http.StatusCreated, next.status)
	require.Equal(t, "ch_000003", decode[Charge](t, next).ID, "ids continue after the last one")
	f = f.restart(t, Mode{})
	require.Equal(t, []string{"ch_000001", "ch_000002", "ch_000003"}, chargeIDs(f.p.Charges()))
}

func chargeIDs(charges []Charge) []string {
	var ids []string
	for _, c := range charges {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestDataFile_RequestLogSurvivesARestart(t *testing.T) {
	f := newDurableFixture(t, Config{})
	f.do(t, post("key-1", validBody))
	f.do(t, post("key-1", validBody))
	f.do(t, get("/v1/charges/ch_000404"))
	before := f.do(t, get("/_admin/requests"))
	require.Len(t, f.p.Requests(), 3)

	f = f.restart(t, Mode{})

	require.Equal(t, string(before.body), string(f.do(t, get("/_admin/requests")).body))
}

func TestDataFile_ModeIsKeptUnlessTheRestartGivesOne(t *testing.T) {
	stored := Mode{Name: ModeRateLimit, Rate: 0.25, Seed: 1<<64 - 1}
	given := Mode{Name: ModeSlow, Delay: 1500 * time.Millisecond, Seed: 7}
	tests := []struct {
		name    string
		restart Mode
		want    Mode
	}{
		{"zero mode keeps the file's", Mode{}, stored},
		{"a mode replaces the file's", given, given},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDurableFixture(t, Config{Mode: Mode{Name: ModeError, Rate: 1}})
			put := f.do(t, call{method: http.MethodPut, path: "/_admin/mode", body: string(mustJSON(t, stored))})
			require.Equal(t, http.StatusOK, put.status, "body: %s", put.body)

			f = f.restart(t, tt.restart)

			require.Equal(t, tt.want, f.p.Mode())
			require.JSONEq(t, string(mustJSON(t, tt.want)), string(f.do(t, get("/_admin/mode")).body))
			f = f.restart(t, Mode{})
			require.Equal(t, tt.want, f.p.Mode(), "the mode given at a restart is the file's from then on")
		})
	}
}

func mustJSON(t *testing.T, m Mode) []byte {
	t.Helper()
	b, err := m.MarshalJSON()
	require.NoError(t, err)
	return b
}

func TestDataFile_ResetIsDurable(t *testing.T) {
	f := newDurableFixture(t, Config{})
	f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusNoContent, f.do(t, call{method: http.MethodPost, path: "/_admin/reset"}).status)

	f = f.restart(t, Mode{})

	require.Empty(t, f.p.Charges())
	require.Empty(t, f.p.Requests())
	again := f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusCreated, again.status)
	require.Empty(t, again.header.Get("Idempotent-Replayed"), "the key was forgotten")
	require.Equal(t, "ch_000001", decode[Charge](t, again).ID)
}

func TestDataFile_KeyExpiryIsDurable(t *testing.T) {
	f := newDurableFixture(t, Config{Retention: 24 * time.Hour})
	f.do(t, post("expired", chargeBody(1000, "tok_visa", "ref-1")))
	f.clock.Advance(2 * time.Hour)
	f.do(t, post("recent", chargeBody(1000, "tok_visa", "ref-2")))
	r := f.do(t, call{method: http.MethodPost, path: "/_admin/expire-keys?older_than=1h"})
	require.JSONEq(t, `{"forgotten":1}`, string(r.body))

	f = f.restart(t, Mode{})

	again := f.do(t, post("expired", chargeBody(5000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, again.status)
	require.Equal(t, "ch_000003", decode[Charge](t, again).ID, "the expired key is still forgotten")
	require.Equal(t, "true", f.do(t, post("recent", chargeBody(1000, "tok_visa", "ref-2"))).header.Get("Idempotent-Replayed"))
	// The first-seen times are kept, so the retention runs on across the
	// restart.
	f.clock.Advance(24 * time.Hour)
	expired := f.do(t, post("recent", chargeBody(7000, "tok_visa", "ref-2")))
	require.Equal(t, http.StatusCreated, expired.status)
	require.Equal(t, "ch_000004", decode[Charge](t, expired).ID)
}

func TestDataFile_ChargeInFlightWhenTheFileIsLostIsNotMade(t *testing.T) {
	f := newDurableFixture(t, Config{Mode: Mode{Name: ModeSlow, Delay: time.Second}})
	type result struct {
		r   reply
		err error
	}
	replied := make(chan result, 1)
	go func() {
		r, err := f.send(context.Background(), f.client, post("key-1", validBody))
		replied <- result{r, err}
	}()
	f.gate.awaitWait(t)

	// The file goes away while the charge is processed, as at a crash: the
	// charge must not be answered as made.
	require.NoError(t, f.p.CloseDataFile())
	f.gate.Open()

	res := <-replied
	require.NoError(t, res.err)
	requireProblem(t, res.r, http.StatusServiceUnavailable, msgDataFileFailed)
	require.Empty(t, f.p.Charges())
	f = f.restart(t, Mode{Name: ModeNormal})
	retry := f.do(t, post("key-1", validBody))
	require.Equal(t, http.StatusCreated, retry.status, "body: %s", retry.body)
	require.Empty(t, retry.header.Get("Idempotent-Replayed"), "the retry is processed afresh")
	require.Equal(t, "ch_000001", decode[Charge](t, retry).ID)
}

func TestDataFile_AChangeTheFileRefusesIsAnswered503AndNotMade(t *testing.T) {
	tests := []struct {
		name string
		c    call
	}{
		{"new charge", post("key-2", validBody)},
		{"mode", call{method: http.MethodPut, path: "/_admin/mode", body: `{"mode":"drop"}`}},
		{"reset", call{method: http.MethodPost, path: "/_admin/reset"}},
		{"expire keys", call{method: http.MethodPost, path: "/_admin/expire-keys?older_than=0s"}},
		{"new refund", postRefundCall("refund-2", refundBody("ch_000001", 100, "refund-ref-2"))},
		{"refund settlement", settleCall("re_000001", `{"status":"failed","failure_reason":"declined"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newDurableFixture(t, Config{})
			f.do(t, post("key-1", validBody))
			f.do(t, postRefundCall("refund-1", refundBody("ch_000001", 100, "refund-ref-1")))
			refunds := f.p.Refunds()
			require.Len(t, refunds, 1)
			require.NoError(t, f.p.CloseDataFile())

			requireProblem(t, f.do(t, tt.c), http.StatusServiceUnavailable, msgDataFileFailed)

			require.Equal(t, Mode{Name: ModeNormal}, f.p.Mode())
			require.Equal(t, []string{"ch_000001"}, chargeIDs(f.p.Charges()))
			require.Equal(t, "true", f.do(t, post("key-1", validBody)).header.Get("Idempotent-Replayed"))
			require.Equal(t, refunds, f.p.Refunds())
		})
	}
}

func TestNew_RefusesABadDataFile(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	require.NoError(t, os.WriteFile(path("text.db"), []byte("Not a database, but long enough to have been one, had it started with the magic header."), 0o600))
	withSQL(t, path("other.db"), `CREATE TABLE orders (id INTEGER PRIMARY KEY)`)
	withSQL(t, path("future.db"), `PRAGMA user_version = 4`)
	inUse, err := New(Config{DataFile: path("in-use.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, inUse.CloseDataFile()) })

	tests := []struct {
		name string
		file string
		want string
	}{
		{"missing directory", path("missing/fakeprovider.db"), "cannot open or create it: its directory must exist and be writable"},
		{"a directory", dir, "cannot open or create it: its directory must exist and be writable"},
		{"not SQLite", path("text.db"), "not a SQLite database"},
		{"another program's SQLite", path("other.db"), "a SQLite database, but not a fake provider's"},
		{"schema from the future", path("future.db"), "schema version 4 is newer than this fake provider's 3; run a newer one, or use another file"},
		{"in use", path("in-use.db"), "in use by another process"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{DataFile: tt.file})

			require.EqualError(t, err, "data file "+tt.file+": "+tt.want)
			require.Nil(t, p)
		})
	}
}

// withSQL creates the SQLite file at path by running stmt.
func withSQL(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(stmt)
	require.NoError(t, err)
}

func TestConfigValidate_RefusesQueryCharactersInTheDataFile(t *testing.T) {
	for _, file := range []string{"state.db?mode=ro", "state#1.db"} {
		require.EqualError(t, Config{DataFile: file}.Validate(), `data file "`+file+`": the path must not contain ? or #`)
	}
}
