package fakeprovider

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDataFile_HoldsTheirMovesAndTheirKeysSurviveARestart(t *testing.T) {
	f := newDurableFixture(t, Config{HoldWindow: time.Hour})
	toCapture, toVoid, toKeep := authorize(t, f, 1000), authorize(t, f, 2000), authorize(t, f, 3000)
	captureReply := f.do(t, captureCall("c1", toCapture.ID, captureBodyOf(600)))
	require.Equal(t, http.StatusOK, f.do(t, voidCall("v1", toVoid.ID, "")).status)
	charges := f.p.Charges()
	report := f.do(t, get("/v1/settlements/"+reportDay)).body

	f = f.restart(t, Mode{})

	require.Equal(t, charges, f.p.Charges())
	replay := f.do(t, captureCall("c1", toCapture.ID, captureBodyOf(600)))
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, string(captureReply.body), string(replay.body))
	require.Equal(t, report, f.do(t, get("/v1/settlements/"+reportDay)).body, "the report reads the capture's time back")
	requireHoldDecline(t, f.do(t, captureCall("c2", toVoid.ID, captureBodyOf(1))), codeChargeNotCapturable, declineHoldVoided, toVoid.ID)
	f.clock.Advance(time.Hour)
	require.Equal(t, ChargeExpired, decode[Charge](t, f.do(t, get("/v1/charges/"+toKeep.ID))).Status, "an authorization still expires after a restart")

	f = f.restart(t, Mode{})

	require.Equal(t, ChargeExpired, f.p.Charges()[2].Status, "the expiry was written")
}

func TestDataFile_AFileOfTheFakeBeforeHoldsIsUpgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schema2.db")
	withSQL(t, path, `
CREATE TABLE mode (id INTEGER PRIMARY KEY CHECK (id = 1), mode TEXT NOT NULL) STRICT;
CREATE TABLE charges (seq INTEGER PRIMARY KEY, charge TEXT NOT NULL) STRICT;
CREATE TABLE keys (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, first_seen_ns INTEGER NOT NULL, status INTEGER NOT NULL,
	content_type TEXT NOT NULL, body BLOB NOT NULL, charge_id TEXT NOT NULL, outcome TEXT NOT NULL) STRICT;
CREATE TABLE requests (seq INTEGER PRIMARY KEY, record TEXT NOT NULL) STRICT;
CREATE TABLE refunds (seq INTEGER PRIMARY KEY, refund TEXT NOT NULL) STRICT;
ALTER TABLE keys ADD COLUMN refund_id TEXT NOT NULL DEFAULT '';
INSERT INTO charges VALUES (1, '{"id":"ch_000001","object":"charge","amount":1000,"currency":"TRY","status":"succeeded","merchant_reference":"ref-1","idempotency_key":"k1","created":"2026-11-30T10:00:00Z"}');
INSERT INTO refunds VALUES (1, '{"refund":{"id":"re_000001","object":"refund","charge":"ch_000001","amount":300,"currency":"TRY","status":"succeeded","failure_reason":null,"merchant_reference":"ref-r1","idempotency_key":"r1","created":"2026-11-30T10:00:00Z"},"succeeded_at":"2026-11-30T10:00:00Z"}');
PRAGMA user_version = 2;`)

	f := newFixture(t, Config{DataFile: path})

	require.Len(t, f.p.Charges(), 1)
	require.Len(t, f.p.Refunds(), 1)
	requireHoldDecline(t, f.do(t, voidCall("v1", "ch_000001", "")), codeChargeNotVoidable, declineNotAHold, "ch_000001")
	hold := authorize(t, f, 500)
	require.Equal(t, http.StatusOK, f.do(t, captureCall("c1", hold.ID, captureBodyOf(500))).status)
	f = f.restart(t, Mode{})
	require.Equal(t, ChargeSucceeded, f.p.Charges()[1].Status)
	require.Equal(t, ptr[int64](500), f.p.Charges()[1].AmountCaptured)
	require.NoError(t, f.p.CloseDataFile())
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var version int
	require.NoError(t, db.QueryRow(`PRAGMA user_version`).Scan(&version))
	require.Equal(t, 3, version)
}
