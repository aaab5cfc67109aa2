package fakeprovider

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDataFile_RefundsTheirKeysAndTheirMovesSurviveARestart(t *testing.T) {
	f := newDurableFixture(t, Config{Retention: 72 * time.Hour})
	charge := paidCharge(t, f, 1000)
	made := f.do(t, postRefundCall("r1", refundBody(charge, 400, "ref-1")))
	refused := f.do(t, postRefundCall("r2", refundBody(charge, 700, "ref-2")))
	f.p.HoldRefunds(true)
	pending := f.do(t, postRefundCall("r3", refundBody(charge, 100, "ref-3")))
	f.clock.Advance(time.Hour)
	_, err := f.p.SettleRefund("re_000003", RefundSucceeded, "")
	require.NoError(t, err)
	f.clock.Advance(24 * time.Hour)
	_, err = f.p.SettleRefund("re_000001", RefundFailed, "expired_or_canceled_card")
	require.NoError(t, err)
	refunds := f.p.Refunds()
	reports := [][]byte{f.do(t, get("/v1/settlements/"+reportDay)).body, f.do(t, get("/v1/settlements/2026-12-01")).body}

	f = f.restart(t, Mode{})

	require.Equal(t, refunds, f.p.Refunds())
	for _, before := range []struct {
		key, body string
		first     reply
	}{
		{"r1", refundBody(charge, 400, "ref-1"), made},
		{"r2", refundBody(charge, 700, "ref-2"), refused},
		{"r3", refundBody(charge, 100, "ref-3"), pending},
	} {
		replay := f.do(t, postRefundCall(before.key, before.body))
		require.Equal(t, before.first.status, replay.status)
		require.Equal(t, string(before.first.body), string(replay.body), "the stored response, byte for byte")
		require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	}
	requireProblem(t, f.do(t, postRefundCall("r1", refundBody(charge, 1, "ref-1"))), http.StatusUnprocessableEntity, msgKeyReused)
	require.Equal(t, reports[0], f.do(t, get("/v1/settlements/"+reportDay)).body, "the report reads the times of the moves back")
	require.Equal(t, reports[1], f.do(t, get("/v1/settlements/2026-12-01")).body)
	require.Equal(t, RefundFailed, decode[Refund](t, f.do(t, get("/v1/refunds/re_000001"))).Status)
	require.Len(t, decode[refundList](t, f.do(t, get("/v1/refunds?merchant_reference=ref-3"))).Data, 1)

	// The failed refund gave its amount back: 900 of the charge remains.
	next := f.do(t, postRefundCall("r4", refundBody(charge, 900, "ref-4")))
	require.Equal(t, http.StatusCreated, next.status, "body: %s", next.body)
	require.Equal(t, "re_000004", decode[Refund](t, next).ID, "ids continue after the last one, the refusal's included")
}

func TestDataFile_AFileOfTheFakeBeforeRefundsIsUpgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	withSQL(t, path, `
CREATE TABLE mode (id INTEGER PRIMARY KEY CHECK (id = 1), mode TEXT NOT NULL) STRICT;
CREATE TABLE charges (seq INTEGER PRIMARY KEY, charge TEXT NOT NULL) STRICT;
CREATE TABLE keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, first_seen_ns INTEGER NOT NULL, status INTEGER NOT NULL,
	content_type TEXT NOT NULL, body BLOB NOT NULL, charge_id TEXT NOT NULL, outcome TEXT NOT NULL) STRICT;
CREATE TABLE requests (seq INTEGER PRIMARY KEY, record TEXT NOT NULL) STRICT;
INSERT INTO charges VALUES (1, '{"id":"ch_000001","object":"charge","amount":1000,"currency":"TRY","status":"succeeded","merchant_reference":"ref-1","idempotency_key":"k1","created":"2026-11-30T10:00:00Z"}');
INSERT INTO keys VALUES ('k1', 'fp', 0, 201, 'application/json', x'7b7d', 'ch_000001', 'charge created');
PRAGMA user_version = 1;`)

	f := newFixture(t, Config{DataFile: path})

	require.Len(t, f.p.Charges(), 1)
	require.Equal(t, http.StatusCreated, f.do(t, postRefundCall("r1", refundBody("ch_000001", 1000, "ref-r1"))).status)
	f = f.restart(t, Mode{})
	require.Len(t, f.p.Refunds(), 1)
	require.NoError(t, f.p.CloseDataFile())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var version int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
	require.Equal(t, dataFileSchema, version)
}
