package fakeprovider

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAdminMode_PutThenGet(t *testing.T) {
	f := newFixture(t, Config{})

	put := f.do(t, call{method: http.MethodPut, path: "/_admin/mode", body: `{"mode":"slow","delay":"1.5s","rate":0,"seed":7}`})

	require.Equal(t, http.StatusOK, put.status, "body: %s", put.body)
	want := Mode{Name: ModeSlow, Delay: 1500 * time.Millisecond, Seed: 7}
	require.Equal(t, want, f.p.Mode())
	got := f.do(t, get("/_admin/mode"))
	require.Equal(t, http.StatusOK, got.status)
	require.JSONEq(t, `{"mode":"slow","delay":"1.5s","rate":0,"seed":7}`, string(got.body))
}

func TestAdminMode_InvalidModeIsRefusedAndNothingChanges(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		detail string
	}{
		{"unknown mode", `{"mode":"chaos"}`, `unknown mode "chaos": want normal, slow, drop, error, lost_response or rate_limit`},
		{"no mode", `{}`, `unknown mode "": want normal, slow, drop, error, lost_response or rate_limit`},
		{"negative delay", `{"mode":"drop","delay":"-1s"}`, "delay must not be negative, got -1s"},
		{"slow without delay", `{"mode":"slow"}`, "mode slow needs a delay greater than 0"},
		{"rate above 1", `{"mode":"error","rate":1.5}`, "rate must be between 0 and 1, got 1.5"},
		{"chance mode without rate", `{"mode":"rate_limit"}`, "mode rate_limit needs a rate greater than 0"},
		{"delay not a duration", `{"mode":"slow","delay":"5 seconds"}`, `delay must be a duration such as 5s, got "5 seconds"`},
		{"delay as number", `{"mode":"slow","delay":5}`, `field "delay" must be a JSON string`},
		{"rate as string", `{"mode":"error","rate":"0.5"}`, `field "rate" must be a JSON number`},
		{"negative seed", `{"mode":"error","rate":1,"seed":-1}`, `field "seed" must be a non-negative JSON integer that fits in 64 bits`},
		{"unknown field", `{"mode":"error","rate":1,"probability":1}`, `unknown field "probability"`},
		{"not an object", `"slow"`, "the body must be a JSON object"},
		{"case-variant field", `{"MODE":"error","rate":1}`, `unknown field "MODE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			initial := Mode{Name: ModeError, Rate: 0.25, Seed: 3}
			f := newFixture(t, Config{Mode: initial})

			r := f.do(t, call{method: http.MethodPut, path: "/_admin/mode", body: tt.body})

			requireProblem(t, r, http.StatusBadRequest, tt.detail)
			require.Equal(t, initial, f.p.Mode())
		})
	}
}

func TestAdminRequests_RecordsEveryProviderRequest(t *testing.T) {
	f := newFixture(t, Config{})
	f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1")))
	f.do(t, get("/v1/charges/ch_000001"))

	r := f.do(t, get("/_admin/requests"))

	require.Equal(t, http.StatusOK, r.status)
	list := decode[struct{ Data []RequestRecord }](t, r)
	require.Len(t, list.Data, 4, "admin requests are not recorded")
	type summary struct {
		Method, Path, Key string
		Status            int
		Replayed          bool
		Outcome           string
	}
	var got []summary
	for _, rec := range list.Data {
		got = append(got, summary{rec.Method, rec.Path, rec.Key, rec.Status, rec.Replayed, rec.Outcome})
		require.Equal(t, f.clock.Now(), rec.Time)
		require.GreaterOrEqual(t, rec.DurationMS, 0.0)
	}
	require.Equal(t, []summary{
		{"POST", "/v1/charges", "key-1", 201, false, outcomeCreated},
		{"POST", "/v1/charges", "key-1", 201, true, outcomeReplayed},
		{"POST", "/v1/charges", "key-1", 422, false, outcomeKeyReused},
		{"GET", "/v1/charges/ch_000001", "", 200, false, outcomeChargeFound},
	}, got)
	require.Len(t, list.Data[0].Fingerprint, 64)
	require.Equal(t, list.Data[0].Fingerprint, list.Data[1].Fingerprint)
	require.NotEqual(t, list.Data[0].Fingerprint, list.Data[2].Fingerprint)
}

func TestAdminCharges_ListsEveryCharge(t *testing.T) {
	f := newFixture(t, Config{})
	empty := f.do(t, get("/_admin/charges"))
	require.JSONEq(t, `{"data":[]}`, string(empty.body))
	f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	f.do(t, post("key-2", chargeBody(1000, "tok_chargeDeclined", "ref-2")))

	r := f.do(t, get("/_admin/charges"))

	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, f.p.Charges(), decode[chargeList](t, r).Data)
	require.Len(t, f.p.Charges(), 2)
}

func TestAdminReset_ForgetsEverythingButTheMode(t *testing.T) {
	mode := Mode{Name: ModeRateLimit, Rate: 0.1, Seed: 9}
	f := newFixture(t, Config{})
	first := f.do(t, post("key-1", chargeBody(1000, "tok_visa", "ref-1")))
	require.NoError(t, f.p.SetMode(mode))

	r := f.do(t, call{method: http.MethodPost, path: "/_admin/reset"})

	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, f.p.Charges())
	require.Empty(t, f.p.Requests())
	require.Equal(t, mode, f.p.Mode())
	require.NoError(t, f.p.SetMode(Mode{Name: ModeNormal}))
	again := f.do(t, post("key-1", chargeBody(2000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, again.status)
	require.Equal(t, decode[Charge](t, first).ID, decode[Charge](t, again).ID, "ids start again at ch_000001")
}

func TestAdminExpireKeys_ForgetsKeysOlderThanTheAge(t *testing.T) {
	f := newFixture(t, Config{})
	f.do(t, post("old", chargeBody(1000, "tok_visa", "ref-1")))
	f.clock.Advance(2 * time.Hour)
	f.do(t, post("new", chargeBody(1000, "tok_visa", "ref-2")))
	expire := func(c call) int {
		t.Helper()
		r := f.do(t, c)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		return decode[struct{ Forgotten int }](t, r).Forgotten
	}

	require.Equal(t, 1, expire(call{method: http.MethodPost, path: "/_admin/expire-keys?older_than=1h"}))
	require.Equal(t, 1, expire(call{method: http.MethodPost, path: "/_admin/expire-keys", body: `{"older_than":"0s"}`}))
	require.Equal(t, 0, expire(call{method: http.MethodPost, path: "/_admin/expire-keys", body: `{"older_than":"0s"}`}))

	// A forgotten key with any body is a new charge.
	r := f.do(t, post("old", chargeBody(5000, "tok_visa", "ref-1")))
	require.Equal(t, http.StatusCreated, r.status)
	require.Equal(t, "ch_000003", decode[Charge](t, r).ID)
}

func TestAdminExpireKeys_InvalidAgeIsRefused(t *testing.T) {
	tests := []struct {
		name   string
		c      call
		detail string
	}{
		{"no age", call{method: http.MethodPost, path: "/_admin/expire-keys", body: `{}`}, msgOlderThan},
		{"no body", call{method: http.MethodPost, path: "/_admin/expire-keys", contentType: "application/json"}, "the body is empty; a JSON object is required"},
		{"negative", call{method: http.MethodPost, path: "/_admin/expire-keys?older_than=-1h"}, msgOlderThan},
		{"not a duration", call{method: http.MethodPost, path: "/_admin/expire-keys", body: `{"older_than":"yesterday"}`}, msgOlderThan},
		{"unknown field", call{method: http.MethodPost, path: "/_admin/expire-keys", body: `{"age":"1h"}`}, `unknown field "age"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			f.do(t, post("key-1", validBody))

			requireProblem(t, f.do(t, tt.c), http.StatusBadRequest, tt.detail)
			require.Equal(t, "true", f.do(t, post("key-1", validBody)).header.Get("Idempotent-Replayed"))
		})
	}
}

func TestLogs_OneLinePerRequestWithKeyStatusReplayedAndDuration(t *testing.T) {
	f := newFixture(t, Config{})
	f.do(t, post("key-1", validBody))
	f.do(t, post("key-1", validBody))
	f.do(t, post("key-1", chargeBody(1, "tok_visa", "other")))

	lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")

	require.Len(t, lines, 3)
	type line struct {
		Level    string
		Msg      string
		Key      string
		Status   int
		Replayed bool
		Duration *int64
	}
	var got []line
	for _, l := range lines {
		var v line
		require.NoError(t, json.Unmarshal([]byte(l), &v), l)
		require.NotNil(t, v.Duration, l)
		v.Duration = nil
		got = append(got, v)
	}
	require.Equal(t, []line{
		{"INFO", outcomeCreated, "key-1", 201, false, nil},
		{"INFO", outcomeReplayed, "key-1", 201, true, nil},
		{"WARN", outcomeKeyReused, "key-1", 422, false, nil},
	}, got)
}
