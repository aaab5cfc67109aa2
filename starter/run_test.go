package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
)

func runStarter(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) string { return env[k] })
	return code, stdout.String(), stderr.String()
}

func TestRun_UsageErrorsExit2WithAReason(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		stderr string
	}{
		{"no command", nil, nil, "Usage:"},
		{"unknown command", nil, []string{"repay"}, `unknown command "repay"`},
		{"refund without an order or a charge", nil, []string{"refund"}, "refund needs --order"},
		{"refund of an order and a charge", nil, []string{"refund", "--order", "1", "--charge", "ch_000001"}, "refund needs --order"},
		{"order without create", nil, []string{"order"}, `takes the subcommand "create"`},
		{"order create without amount", nil, []string{"order", "create", "--currency", "TRY"}, "needs --amount and --currency"},
		{"checkout without card", nil, []string{"checkout", "--order", "1"}, "needs --card"},
		{"checkout with order and amount", nil, []string{"checkout", "--order", "1", "--amount", "1.00", "--currency", "TRY", "--card", "tok_visa"}, "not both"},
		{"checkout with amount only", nil, []string{"checkout", "--amount", "1.00", "--card", "tok_visa"}, "both --amount and --currency"},
		{"checkout without order", nil, []string{"checkout", "--card", "tok_visa"}, "--order with a positive order number"},
		{"checkout with negative wait timeout", nil, []string{"checkout", "--order", "1", "--card", "tok_visa", "--wait-timeout", "-1s"}, "--wait-timeout must be positive"},
		{"status without order", nil, []string{"status"}, "--order with a positive order number"},
		{"capture without order", nil, []string{"capture"}, "capture needs --order"},
		{"void without order", nil, []string{"void", "--key", "k"}, "void needs --order"},
		{"void with an amount", nil, []string{"void", "--order", "1", "--amount", "1.00"}, "flag provided but not defined: -amount"},
		{"checkout with a deadline action of no manual capture", nil, []string{"checkout", "--order", "1", "--card", "tok_visa", "--on-deadline", "void"}, "--on-deadline needs --capture manual"},
		{"settlement without subcommand", nil, []string{"settlement"}, `takes the subcommand "run" or "show"`},
		{"settlement without date", nil, []string{"settlement", "show"}, "settlement show needs --date"},
		{"status with order not a number", nil, []string{"status", "--order", "abc"}, `invalid value "abc"`},
		{"unknown flag", nil, []string{"status", "--order", "1", "--verbose"}, "flag provided but not defined: -verbose"},
		{"positional argument", nil, []string{"status", "--order", "1", "extra"}, `unexpected argument "extra"`},
		{"--api without a scheme", nil, []string{"status", "--order", "1", "--api", "localhost:8080"}, `--api: "localhost:8080" is not a URL; write http://localhost:8080`},
		{"--api with an address alone", nil, []string{"status", "--order", "1", "--api", "127.0.0.1:18080"}, `--api: "127.0.0.1:18080" is not a URL; write http://127.0.0.1:18080`},
		{"bad environment address", map[string]string{envAPI: "ftp://example"}, []string{"status", "--order", "1"}, envAPI + `: "ftp://example" must start with http://`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runStarter(t, tt.env, tt.args...)
			require.Equal(t, exitUsage, code, "stderr: %s", stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tt.stderr)
		})
	}
}

func TestRun_HelpDocumentsTheExitCodes(t *testing.T) {
	code, stdout, _ := runStarter(t, nil, "--help")
	require.Equal(t, exitPaid, code)
	for _, line := range []string{"0  paid", "2  usage error", "3  card declined", "4  payment pending", "5  conflict", "6  not charged"} {
		require.Contains(t, stdout, line)
	}
}

// closedAddress returns an http:// address where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func TestRun_UnreachableAPINamesTheAddressTried(t *testing.T) {
	fromFlag := closedAddress(t)
	code, _, stderr := runStarter(t, nil, "status", "--order", "1", "--api", fromFlag)
	require.Equal(t, exitOther, code)
	require.Contains(t, stderr, "cannot reach the checkout API at "+fromFlag)

	fromEnv := closedAddress(t)
	code, _, stderr = runStarter(t, map[string]string{envAPI: fromEnv + "/"}, "checkout", "--order", "1", "--card", "tok_visa")
	require.Equal(t, exitOther, code)
	require.Contains(t, stderr, "cannot reach the checkout API at "+fromEnv)
}

func TestRun_DefaultAddressIsLocalhost8080(t *testing.T) {
	var opts options
	fs := newFlagSet("status", &bytes.Buffer{}, &opts)
	api, err := parseFlags(fs, nil, &opts, func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "http://localhost:8080", api.BaseURL())
}

// TestRun_NothingChargedExits6 checks out against an API that answers as
// chargeonce's does when the provider processed none of the requests.
func TestRun_NothingChargedExits6(t *testing.T) {
	order := `{"id": 1001, "status": "placed", "total": "548.90", "currency": "TRY", "attempts": []}`
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/orders/1001":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, order)
		case r.Method == http.MethodPost && r.URL.Path == "/api/orders/1001/checkout":
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Retry-After", "10")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"type": "urn:chargeonce:problem:provider-unavailable", "title": "The payment provider is unavailable; nothing was charged.", "status": 503, "orderId": 1001}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)

	code, stdout, stderr := runStarter(t, nil, "checkout", "--api", api.URL, "--order", "1001", "--card", "tok_visa")
	require.Equal(t, exitNotProcessed, code, "stderr: %s", stderr)
	require.Equal(t, "not charged: The payment provider is unavailable; nothing was charged. Pay again in 10s; the next checkout is a new attempt with a new key\n", stdout)

	code, stdout, _ = runStarter(t, nil, "checkout", "--json", "--api", api.URL, "--order", "1001", "--card", "tok_visa")
	require.Equal(t, exitNotProcessed, code)
	var res checkoutResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Equal(t, checkoutResult{OrderID: 1001, Outcome: "not_processed", HTTPStatus: http.StatusServiceUnavailable, OrderStatus: "placed",
		Detail: "The payment provider is unavailable; nothing was charged."}, res)
}

func TestDescribe_TellsEachRequestInAFewWords(t *testing.T) {
	status := func(s int) *int { return &s }
	tests := []struct {
		req  wire.ProviderRequest
		want string
	}{
		{wire.ProviderRequest{Outcome: "timeout", DurationMS: 3004}, "timeout after 3.0s"},
		{wire.ProviderRequest{Status: status(0), DurationMS: 120}, "no response after 0.1s"},
		{wire.ProviderRequest{Outcome: chargeonce.RequestUnanswered}, "sent, no answer recorded"},
		{wire.ProviderRequest{Status: status(409), Outcome: "in_flight"}, "409 in flight"},
		{wire.ProviderRequest{Status: status(201), Replayed: true}, "201 replayed"},
		{wire.ProviderRequest{Status: status(201)}, "201 charged"},
		{wire.ProviderRequest{Status: status(402)}, "402 declined"},
		{wire.ProviderRequest{Status: status(422)}, "422 key reused with another body"},
		{wire.ProviderRequest{Status: status(503)}, "503 provider error"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, describe(tt.req, chargeWords))
	}
}

// A request listed before it went out is printed with its answer, not as
// lost, unless the checkout has answered and it still has none.
func TestTimeline_WaitsForTheAnswerOfARequestInFlight(t *testing.T) {
	status := func(s int) *int { return &s }
	order := func(reqs ...wire.ProviderRequest) wire.Order {
		return wire.Order{Attempts: []wire.Attempt{{IdempotencyKey: "k1", Requests: reqs}}}
	}
	timeout := wire.ProviderRequest{Outcome: "timeout", DurationMS: 3000}
	inFlight := wire.ProviderRequest{Outcome: chargeonce.RequestUnanswered}
	charged := wire.ProviderRequest{Status: status(201), Outcome: "succeeded"}

	var out bytes.Buffer
	tl := &timeline{w: &out}
	tl.baseline(wire.Order{})
	tl.show(order(timeout, inFlight), false)
	tl.show(order(timeout, charged, inFlight), false)
	tl.show(order(timeout, charged, inFlight), true)
	require.Equal(t, "key k1\nattempt 1  timeout after 3.0s\nattempt 2  201 charged\nattempt 3  sent, no answer recorded\n", out.String())
	require.Equal(t, []string{"attempt 1  timeout after 3.0s", "attempt 2  201 charged", "attempt 3  sent, no answer recorded"}, tl.lines)
}

// A key line names its provider, and why the attempt went there, when the
// payment moved to another provider; a payment that stays says nothing.
func TestTimeline_NamesTheProviderAPaymentMovedTo(t *testing.T) {
	status := func(s int) *int { return &s }
	why := "failover from default: not_processed"
	order := wire.Order{ID: 1001, Status: "paid", Total: "25.00", Currency: "TRY", Attempts: []wire.Attempt{
		{IdempotencyKey: "k1", Provider: "default", Status: "not_processed", Requests: []wire.ProviderRequest{{Status: status(503)}}},
		{IdempotencyKey: "k2", Provider: "backup", RoutedBy: &why, Status: "succeeded", Requests: []wire.ProviderRequest{{Status: status(201)}}},
		{IdempotencyKey: "k3", Provider: "backup", Status: "succeeded"},
	}}

	var out bytes.Buffer
	tl := &timeline{w: &out}
	tl.baseline(wire.Order{})
	tl.show(order, true)
	require.Equal(t, "key k1\nattempt 1  503 provider error\nkey k2  at backup (failover from default: not_processed)\nattempt 1  201 charged\n", out.String())

	out.Reset()
	printOrder(&out, order)
	require.Contains(t, out.String(), "key k1  not_processed  created 0001-01-01T00:00:00Z\n  attempt 1  503 provider error\n"+
		"key k2  succeeded  created 0001-01-01T00:00:00Z  at backup (failover from default: not_processed)\n  attempt 1  201 charged\n"+
		"key k3  succeeded  created 0001-01-01T00:00:00Z\n")
}

// The starter's --api is read from the variable every chargeonce command
// would read it from.
func TestEnvAPI_IsTheNameTheCommandsGiveTheFlag(t *testing.T) {
	require.Equal(t, cli.EnvName("api"), envAPI)
	require.Equal(t, cli.EnvName("api-key"), envAPIKey)
}

// The starter looks for the key where the dev stack writes it by default.
func TestDevKeyFile_IsWhereTheDevStackWritesItsKey(t *testing.T) {
	require.Equal(t, filepath.Join(cli.DevDataDir, apikey.FileName), devKeyFile)
}

func TestRun_SendsTheKeyOfTheFlagTheEnvironmentOrTheDevFile(t *testing.T) {
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type": "urn:chargeonce:problem:api-key-required", "title": "A valid API key is required.", "status": 401, "detail": "no API key"}`)
	}))
	t.Cleanup(api.Close)
	t.Chdir(t.TempDir())

	code, _, stderr := runStarter(t, nil, "status", "--api", api.URL, "--order", "1")
	require.Equal(t, exitOther, code)
	require.Contains(t, stderr, "A valid API key is required. no API key (give one with --api-key or CHARGEONCE_API_KEY")

	require.NoError(t, os.Mkdir(".chargeonce", 0o700))
	require.NoError(t, os.WriteFile(devKeyFile, []byte("ck_fromfile\n"), 0o600))
	runStarter(t, nil, "status", "--api", api.URL, "--order", "1")
	runStarter(t, map[string]string{envAPIKey: "ck_fromenv"}, "status", "--api", api.URL, "--order", "1")
	runStarter(t, map[string]string{envAPIKey: "ck_fromenv"}, "status", "--api", api.URL, "--api-key", "ck_fromflag", "--order", "1")
	require.Equal(t, []string{"", "Bearer ck_fromfile", "Bearer ck_fromenv", "Bearer ck_fromflag"}, got)

	code, _, stderr = runStarter(t, map[string]string{envAPIKey: "ck_a\r\nX-Evil: 1"}, "status", "--api", api.URL, "--order", "1")
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, "CHARGEONCE_API_KEY: the API key holds spaces or control characters")
}

func TestRun_HelpOfEveryCommandWritesFlagsWithTwoDashes(t *testing.T) {
	code, usage, _ := runStarter(t, nil, "--help")
	require.Equal(t, exitPaid, code)
	require.Empty(t, helptext.Faults(usage))
	for _, command := range [][]string{{"order", "create"}, {"checkout"}, {"status"}, {"refund"}, {"capture"}, {"void"}, {"settlement", "run"}, {"settlement", "show"}} {
		t.Run(strings.Join(command, " "), func(t *testing.T) {
			code, _, help := runStarter(t, nil, append(command, "--help")...)
			require.Equal(t, exitPaid, code)
			require.Contains(t, help, "  --api string\n")
			require.Empty(t, helptext.Faults(help))
		})
	}
}

// TestRun_RefundExitsWithItsOutcomesCode refunds against an API that
// answers 503 (nothing refunded) and 409 (the first request is still being
// answered): each exits with its own code, not exitOther.
func TestRun_RefundExitsWithItsOutcomesCode(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   int
	}{
		{http.StatusServiceUnavailable, exitNotProcessed},
		{http.StatusConflict, exitConflict},
	} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/orders/1001/refunds" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(tt.status)
				_, _ = fmt.Fprintf(w, `{"type": "about:blank", "title": %q, "status": %d}`, http.StatusText(tt.status), tt.status)
			}))
			t.Cleanup(api.Close)

			code, _, stderr := runStarter(t, nil, "refund", "--api", api.URL, "--order", "1001", "--reason", "returned")
			require.Equal(t, tt.want, code, "stderr: %s", stderr)
			require.Contains(t, stderr, http.StatusText(tt.status))
		})
	}
}

// TestRun_MovesExitWithTheirOutcomesCode captures and voids against an API
// that answers each outcome: each exits with its own code.
func TestRun_MovesExitWithTheirOutcomesCode(t *testing.T) {
	move := func(status string) string {
		return `{"id": "01a1d96c-e23d-77bf-801e-9df969c1d378", "kind": "capture", "orderId": 1001, "status": "` + status +
			`", "amount": "5.00", "currency": "TRY", "declineCode": null, "origin": "merchant", "merchantReference": "r", "provider": "default",
			"createdAt": "2026-11-30T11:00:00Z", "settledAt": null}`
	}
	for _, tt := range []struct {
		name, command string
		status        int
		body          string
		want          int
	}{
		{"captured", "capture", http.StatusOK, move("succeeded"), exitPaid},
		{"declined", "void", http.StatusOK, move("declined"), exitDeclined},
		{"pending", "capture", http.StatusAccepted, move("pending"), exitPending},
		{"nothing moved", "void", http.StatusServiceUnavailable, `{"type": "about:blank", "title": "Service Unavailable", "status": 503}`, exitNotProcessed},
		{"not held", "capture", http.StatusConflict, `{"type": "about:blank", "title": "Conflict", "status": 409}`, exitConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					// The read-back of the move's requests may fail; the
					// answer of the POST stands.
					http.NotFound(w, r)
					return
				}
				if r.URL.Path != "/api/orders/1001/"+tt.command || r.Header.Get("Idempotency-Key") == "" {
					http.NotFound(w, r)
					return
				}
				contentType := "application/json"
				if tt.status >= 400 {
					contentType = "application/problem+json"
				}
				w.Header().Set("Content-Type", contentType)
				w.WriteHeader(tt.status)
				_, _ = fmt.Fprint(w, tt.body)
			}))
			t.Cleanup(api.Close)

			code, stdout, stderr := runStarter(t, nil, tt.command, "--api", api.URL, "--order", "1001")
			require.Equal(t, tt.want, code, "stdout: %s\nstderr: %s", stdout, stderr)
			require.Contains(t, stdout, "Idempotency-Key ")
		})
	}
}
