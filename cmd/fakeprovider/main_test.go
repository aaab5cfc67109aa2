package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/internal/cli"
	"chargeonce/internal/helptext"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// defaultWebhooks is the webhook configuration without webhook flags: no
// endpoint, the default schedule.
var defaultWebhooks = fakeprovider.WebhookConfig{
	Schedule: fakeprovider.DefaultWebhookSchedule, Timeout: fakeprovider.DefaultWebhookTimeout, Chaos: fakeprovider.WebhookChaos{Seed: 1},
}

func TestParseConfig_ReadsFlagsAndTheEnvironment(t *testing.T) {
	environment := map[string]string{
		"FAKEPROVIDER_ADDR":             "127.0.0.1:9000",
		"FAKEPROVIDER_MODE":             "error",
		"FAKEPROVIDER_DELAY":            "2s",
		"FAKEPROVIDER_RATE":             "0.25",
		"FAKEPROVIDER_SEED":             "7",
		"FAKEPROVIDER_RETENTION":        "1h",
		"FAKEPROVIDER_LOOKUP_RATE":      "20",
		"FAKEPROVIDER_HOLD_WINDOW":      "48h",
		"FAKEPROVIDER_SHUTDOWN_TIMEOUT": "3s",
		"FAKEPROVIDER_DATA_FILE":        "fake.db",
		"FAKEPROVIDER_FEE_BPS":          "250",
	}
	fromEnvironment := config{
		addr: "127.0.0.1:9000", shutdownTimeout: 3 * time.Second,
		provider: fakeprovider.Config{Webhooks: defaultWebhooks, Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Delay: 2 * time.Second, Rate: 0.25, Seed: 7}, Retention: time.Hour, LookupRate: 20, HoldWindow: 48 * time.Hour, DataFile: "fake.db", Fee: fakeprovider.FeeRule{BasisPoints: 250, FixedMinor: 30}},
	}
	oneFlag := fromEnvironment
	oneFlag.provider.Mode.Name = fakeprovider.ModeRateLimit
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want config
	}{
		{"defaults", nil, nil, config{
			addr: ":8099", shutdownTimeout: 15 * time.Second,
			provider: fakeprovider.Config{Webhooks: defaultWebhooks, Mode: fakeprovider.Mode{Name: fakeprovider.ModeNormal, Rate: 1, Seed: 1}, Retention: 24 * time.Hour, LookupRate: 50, HoldWindow: fakeprovider.DefaultHoldWindow, Fee: fakeprovider.DefaultFee},
		}},
		{"environment only", nil, environment, fromEnvironment},
		{"flags win", []string{"--addr", ":0", "--mode", "slow", "--delay=5s", "-rate", "0.5", "--seed", "9", "--retention", "2h", "--lookup-rate", "0.5", "--hold-window", "1h", "--shutdown-timeout", "1s", "--data-file", "other.db", "--fee-fixed", "5"}, environment, config{
			addr: ":0", shutdownTimeout: time.Second,
			provider: fakeprovider.Config{Webhooks: defaultWebhooks, Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 5 * time.Second, Rate: 0.5, Seed: 9}, Retention: 2 * time.Hour, LookupRate: 0.5, HoldWindow: time.Hour, DataFile: "other.db", Fee: fakeprovider.FeeRule{BasisPoints: 250, FixedMinor: 5}},
		}},
		{"one flag, the rest from the environment", []string{"--mode", "rate_limit"}, environment, oneFlag},
		{"webhooks", []string{"--webhook-url", "http://api:8080/webhooks/provider", "--webhook-url", "http://other/hook", "--webhook-drop-rate", "0.1"}, map[string]string{
			"FAKEPROVIDER_WEBHOOK_SECRET":         testSecret + "," + testSecret,
			"FAKEPROVIDER_WEBHOOK_SCHEDULE":       "1s,2s",
			"FAKEPROVIDER_WEBHOOK_TIMEOUT":        "3s",
			"FAKEPROVIDER_WEBHOOK_DELAY":          "4s",
			"FAKEPROVIDER_WEBHOOK_DROP_RATE":      "0.9",
			"FAKEPROVIDER_WEBHOOK_DUPLICATE_RATE": "0.2",
			"FAKEPROVIDER_WEBHOOK_REORDER":        "5s",
			"FAKEPROVIDER_WEBHOOK_SEED":           "6",
		}, config{
			addr: ":8099", shutdownTimeout: 15 * time.Second,
			provider: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeNormal, Rate: 1, Seed: 1}, Retention: 24 * time.Hour, LookupRate: 50, HoldWindow: fakeprovider.DefaultHoldWindow, Fee: fakeprovider.DefaultFee,
				Webhooks: fakeprovider.WebhookConfig{
					URLs: []string{"http://api:8080/webhooks/provider", "http://other/hook"}, Secrets: []string{testSecret, testSecret},
					Schedule: fakeprovider.Schedule{time.Second, 2 * time.Second}, Timeout: 3 * time.Second,
					Chaos: fakeprovider.WebhookChaos{Delay: 4 * time.Second, DropRate: 0.1, DuplicateRate: 0.2, Reorder: 5 * time.Second, Seed: 6},
				}},
		}},
		{"data file without a mode flag keeps the file's mode", []string{"--data-file", "fake.db"}, nil, config{
			addr: ":8099", shutdownTimeout: 15 * time.Second,
			provider: fakeprovider.Config{Webhooks: defaultWebhooks, Retention: 24 * time.Hour, LookupRate: 50, HoldWindow: fakeprovider.DefaultHoldWindow, DataFile: "fake.db", Fee: fakeprovider.DefaultFee},
		}},
		{"data file with one mode flag", []string{"--data-file", "fake.db", "--seed", "3"}, nil, config{
			addr: ":8099", shutdownTimeout: 15 * time.Second,
			provider: fakeprovider.Config{Webhooks: defaultWebhooks, Mode: fakeprovider.Mode{Name: fakeprovider.ModeNormal, Rate: 1, Seed: 3}, Retention: 24 * time.Hour, LookupRate: 50, HoldWindow: fakeprovider.DefaultHoldWindow, DataFile: "fake.db", Fee: fakeprovider.DefaultFee},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer

			c, err := parseConfig(tt.args, env(tt.env), &stdout)

			require.NoError(t, err)
			require.Equal(t, tt.want, c)
			require.Empty(t, stdout.String())
		})
	}
}

func TestRun_BadSettingsExit2NamingTheirSource(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"rate from flag", []string{"--rate", "often"}, nil, `invalid value "often" for flag -rate: parse error`},
		{"rate from env", nil, map[string]string{"FAKEPROVIDER_RATE": "often"}, `invalid value "often" for environment variable FAKEPROVIDER_RATE: parse error`},
		{"delay from env", nil, map[string]string{"FAKEPROVIDER_DELAY": "5"}, `invalid value "5" for environment variable FAKEPROVIDER_DELAY: parse error`},
		{"seed from flag", []string{"--seed=-1"}, nil, `invalid value "-1" for flag -seed: parse error`},
		{"retention from env", nil, map[string]string{"FAKEPROVIDER_RETENTION": "forever"}, `invalid value "forever" for environment variable FAKEPROVIDER_RETENTION: parse error`},
		{"shutdown timeout from flag", []string{"--shutdown-timeout", "soon"}, nil, `invalid value "soon" for flag -shutdown-timeout: parse error`},
		{"unknown mode", []string{"--mode", "chaos"}, nil, `invalid settings: unknown mode "chaos": want normal, slow, drop, error, lost_response or rate_limit`},
		{"slow without delay", nil, map[string]string{"FAKEPROVIDER_MODE": "slow"}, `invalid settings: mode slow needs a delay greater than 0`},
		{"rate above 1", []string{"--rate", "2"}, nil, `invalid settings: rate must be between 0 and 1, got 2`},
		{"rate NaN", []string{"--rate", "NaN"}, nil, `invalid settings: rate must be between 0 and 1, got NaN`},
		{"negative delay", []string{"--delay", "-1s"}, nil, `invalid settings: delay must not be negative, got -1s`},
		{"short retention", nil, map[string]string{"FAKEPROVIDER_RETENTION": "10ms"}, `invalid settings: retention must be at least 1s, got 10ms`},
		{"short hold window", []string{"--hold-window", "500ms"}, nil, `invalid settings: hold window must be at least 1s, got 500ms`},
		{"lookup rate from env", nil, map[string]string{"FAKEPROVIDER_LOOKUP_RATE": "fast"}, `invalid value "fast" for environment variable FAKEPROVIDER_LOOKUP_RATE: parse error`},
		{"zero lookup rate", []string{"--lookup-rate", "0"}, nil, `invalid settings: --lookup-rate must be positive, got 0: the fake has no unlimited rate`},
		{"negative lookup rate", nil, map[string]string{"FAKEPROVIDER_LOOKUP_RATE": "-1"}, `invalid settings: lookup rate must be a positive number of lookups a second, got -1`},
		{"infinite lookup rate", []string{"--lookup-rate", "+Inf"}, nil, `invalid settings: lookup rate must be a positive number of lookups a second, got +Inf`},
		{"bad addr", []string{"--addr", "8099"}, nil, `invalid settings: --addr must be host:port such as :8099, got "8099"`},
		{"zero shutdown timeout", []string{"--shutdown-timeout", "0s"}, nil, `invalid settings: --shutdown-timeout must be positive, got 0s`},
		{"query in data file", nil, map[string]string{"FAKEPROVIDER_DATA_FILE": "fake.db?mode=ro"}, `invalid settings: data file "fake.db?mode=ro": the path must not contain ? or #`},
		{"webhook URL without a secret", []string{"--webhook-url", "http://api:8080/webhooks/provider"}, nil, `invalid settings: webhook secret: webhook: at least one secret is needed`},
		{"relative webhook URL", []string{"--webhook-url", "/webhooks/provider", "--webhook-secret", testSecret}, nil, `invalid settings: webhook URL "/webhooks/provider" must be an absolute http or https URL`},
		{"bad webhook schedule", nil, map[string]string{"FAKEPROVIDER_WEBHOOK_SCHEDULE": "5s,never"}, `invalid value "5s,never" for environment variable FAKEPROVIDER_WEBHOOK_SCHEDULE: a schedule is positive durations separated by commas, such as 5s,5m,30m; got "never"`},
		{"webhook drop rate above 1", []string{"--webhook-drop-rate", "1.5"}, nil, `invalid settings: webhook drop rate must be between 0 and 1, got 1.5`},
		{"unknown flag", []string{"--colour"}, nil, "flag provided but not defined: -colour"},
		{"stray argument", []string{"serve"}, nil, `unexpected argument "serve" (flags start with --)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer

			err := run(context.Background(), tt.args, env(tt.env), &stdout, &stderr)

			require.Equal(t, 2, cli.ExitCode(&stderr, name, err))
			require.Equal(t, "fakeprovider: "+tt.want+" (see --help)\n", stderr.String())
			require.Empty(t, stdout.String())
		})
	}
}

func TestRun_HelpListsEveryVariableAndExits0(t *testing.T) {
	var stdout, stderr bytes.Buffer

	err := run(context.Background(), []string{"--help"}, env(nil), &stdout, &stderr)

	require.ErrorIs(t, err, flag.ErrHelp)
	require.Equal(t, 0, cli.ExitCode(&stderr, name, err))
	require.Empty(t, stderr.String())
	require.Empty(t, helptext.Faults(stdout.String()))
	require.Contains(t, stdout.String(), fmt.Sprintf("request misbehaves in the error, lost_response and rate_limit modes (default \"%v\")", fakeprovider.DefaultRate))
	for _, flagAndVar := range []string{
		"--addr string\t(env FAKEPROVIDER_ADDR)",
		"--mode string\t(env FAKEPROVIDER_MODE)",
		"--delay duration\t(env FAKEPROVIDER_DELAY)",
		"--rate float\t(env FAKEPROVIDER_RATE)",
		"--seed uint\t(env FAKEPROVIDER_SEED)",
		"--retention duration\t(env FAKEPROVIDER_RETENTION)",
		"--lookup-rate float\t(env FAKEPROVIDER_LOOKUP_RATE)",
		"--hold-window duration\t(env FAKEPROVIDER_HOLD_WINDOW)",
		"--shutdown-timeout duration\t(env FAKEPROVIDER_SHUTDOWN_TIMEOUT)",
		"--data-file file\t(env FAKEPROVIDER_DATA_FILE)",
	} {
		require.Contains(t, stdout.String(), flagAndVar)
	}
	require.Contains(t, stdout.String(), "POST /v1/charges")
	require.Contains(t, stdout.String(), "Example: fakeprovider --mode slow --delay 5s")
}

// logLines is a log destination for tests: slog writes each record with one
// Write, which arrives here as one string. The buffer is far larger than any
// test's output, so logging never waits for the test.
type logLines chan string

func newLogLines() logLines { return make(logLines, 1024) }

func (l logLines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// await returns the first record that contains want, skipping the others.
func (l logLines) await(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-l:
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout:
			require.FailNow(t, "no log record with "+want)
		}
	}
}

var listeningAddr = regexp.MustCompile(`msg="fake provider listening" addr=(\S+)`)

// postCharge sends one charge request and reports its status.
func postCharge(addr, key string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/charges",
		strings.NewReader(`{"amount":100,"currency":"EUR","source":"tok_visa","merchant_reference":"ref-`+key+`"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

type postResult struct {
	status int
	err    error
}

func postInBackground(addr, key string) <-chan postResult {
	c := make(chan postResult, 1)
	go func() {
		status, err := postCharge(addr, key)
		c <- postResult{status, err}
	}()
	return c
}

func TestRun_ServesChargesUntilCancelledThenStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newLogLines()
	result := make(chan error, 1)
	go func() {
		result <- run(ctx, []string{"--addr", "127.0.0.1:0", "--seed", "42"}, env(map[string]string{"FAKEPROVIDER_RETENTION": "1h"}), io.Discard, logs)
	}()
	started := logs.await(t, "fake provider listening")
	require.Contains(t, started, "mode=normal delay=0s rate=1 seed=42 retention=1h0m0s lookup_rate=50")
	addr := listeningAddr.FindStringSubmatch(started)[1]

	status, err := postCharge(addr, "key-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)

	cancel()
	require.NoError(t, <-result)
	logs.await(t, "msg=stopped")
}

func TestRun_DataFileKeepsTheChargesAcrossARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fake.db")
	start := func() (addr string, stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		logs := newLogLines()
		result := make(chan error, 1)
		args := []string{"--addr", "127.0.0.1:0", "--data-file", file}
		go func() { result <- run(ctx, args, env(nil), io.Discard, logs) }()
		addr = listeningAddr.FindStringSubmatch(logs.await(t, "fake provider listening"))[1]
		return addr, func() {
			cancel()
			require.NoError(t, <-result)
		}
	}
	addr, stop := start()
	status, err := postCharge(addr, "key-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	stop()

	addr, stop = start()
	defer stop()

	resp, err := http.Get("http://" + addr + "/_admin/charges")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct{ Data []fakeprovider.Charge }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Data, 1)
	require.Equal(t, "key-1", list.Data[0].IdempotencyKey)
}

func TestRun_BadDataFileExits1NamingIt(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(text, []byte("Not a database, but long enough to have been one, had it started with the magic header."), 0o600))
	tests := []struct {
		name string
		file string
		want string
	}{
		{"missing directory", filepath.Join(dir, "missing", "fake.db"), "cannot open or create it: its directory must exist and be writable"},
		{"not SQLite", text, "not a SQLite database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer

			err := run(context.Background(), []string{"--addr", "127.0.0.1:0", "--data-file", tt.file}, env(nil), io.Discard, &stderr)

			require.Equal(t, 1, cli.ExitCode(&stderr, name, err))
			require.Equal(t, "fakeprovider: data file "+tt.file+": "+tt.want+"\n", stderr.String())
		})
	}
}

func TestRun_BusyPortExits1NamingTheFlag(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	var stderr bytes.Buffer

	err = run(context.Background(), []string{"--addr", busy.Addr().String()}, env(nil), io.Discard, &stderr)

	require.Equal(t, 1, cli.ExitCode(&stderr, name, err))
	require.Contains(t, stderr.String(), "is already in use")
	require.Contains(t, stderr.String(), "--addr")
}

// startServing runs serveProvider for p on a loopback port until the
// returned cancel is called; its result arrives on the channel.
func startServing(t *testing.T, p *fakeprovider.Provider) (addr string, logs logLines, cancel context.CancelFunc, served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logs = newLogLines()
	done := make(chan error, 1)
	go func() { done <- serveProvider(ctx, ln, p, 10*time.Second, slog.New(slog.NewTextHandler(logs, nil))) }()
	return ln.Addr().String(), logs, cancel, done
}

func TestServeProvider_ShutdownDrainsTheChargeInProgress(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("data file %v", durable), func(t *testing.T) {
			var file string
			if durable {
				file = filepath.Join(t.TempDir(), "fake.db")
			}
			waiting := make(chan struct{}, 1)
			release := make(chan time.Time)
			p, err := fakeprovider.New(fakeprovider.Config{
				Mode:     fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Hour},
				After:    func(time.Duration) <-chan time.Time { waiting <- struct{}{}; return release },
				DataFile: file,
			})
			require.NoError(t, err)
			addr, logs, cancel, served := startServing(t, p)
			replied := postInBackground(addr, "key-1")
			<-waiting

			cancel()
			logs.await(t, "shutting down")
			close(release)

			require.NoError(t, <-served)
			r := <-replied
			require.NoError(t, r.err)
			require.Equal(t, http.StatusCreated, r.status)
			require.Len(t, p.Charges(), 1)
			logs.await(t, "msg=stopped")
			if !durable {
				return
			}
			reopened, err := fakeprovider.New(fakeprovider.Config{DataFile: file})
			require.NoError(t, err)
			defer reopened.CloseDataFile()
			require.Equal(t, p.Charges(), reopened.Charges())
			requests := reopened.ChargeRequests()
			require.Len(t, requests, 1, "the drained request was recorded before the file closed")
			require.Equal(t, http.StatusCreated, requests[0].Status)
		})
	}
}

func TestServeProvider_ShutdownReleasesDroppedRequests(t *testing.T) {
	holding := make(chan struct{}, 1)
	p, err := fakeprovider.New(fakeprovider.Config{
		// With a delay the drop would end in a 504; this one never fires, so
		// only shutdown can end it.
		Mode:  fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: time.Hour},
		After: func(time.Duration) <-chan time.Time { holding <- struct{}{}; return nil },
	})
	require.NoError(t, err)
	addr, _, cancel, served := startServing(t, p)
	replied := postInBackground(addr, "key-1")
	<-holding

	cancel()

	require.NoError(t, <-served, "shutdown must not wait for the held request until its deadline")
	require.Error(t, (<-replied).err)
	require.Empty(t, p.Charges())
}
