package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"chargeonce/fakeprovider"

	"github.com/stretchr/testify/require"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

func TestParseConfig_Defaults(t *testing.T) {
	opts, err := parseConfig(nil, env(nil))

	require.NoError(t, err)
	require.Equal(t, options{
		addr:            ":8099",
		shutdownTimeout: 15 * time.Second,
		provider: fakeprovider.Config{
			Mode:      fakeprovider.Mode{Name: fakeprovider.ModeNormal, Rate: 1, Seed: 1},
			Retention: 24 * time.Hour,
		},
	}, opts)
}

func TestParseConfig_FlagsOverrideTheEnvironment(t *testing.T) {
	environment := env(map[string]string{
		"FAKEPROVIDER_ADDR":             "127.0.0.1:9000",
		"FAKEPROVIDER_MODE":             "error",
		"FAKEPROVIDER_DELAY":            "2s",
		"FAKEPROVIDER_RATE":             "0.25",
		"FAKEPROVIDER_SEED":             "7",
		"FAKEPROVIDER_RETENTION":        "1h",
		"FAKEPROVIDER_SHUTDOWN_TIMEOUT": "3s",
	})
	tests := []struct {
		name string
		args []string
		want options
	}{
		{"environment only", nil, options{
			addr: "127.0.0.1:9000", shutdownTimeout: 3 * time.Second,
			provider: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Delay: 2 * time.Second, Rate: 0.25, Seed: 7}, Retention: time.Hour},
		}},
		{"flags win", []string{"--addr", ":0", "--mode", "slow", "--delay=5s", "-rate", "0.5", "--seed", "9", "--retention", "2h", "--shutdown-timeout", "1s"}, options{
			addr: ":0", shutdownTimeout: time.Second,
			provider: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 5 * time.Second, Rate: 0.5, Seed: 9}, Retention: 2 * time.Hour},
		}},
		{"one flag", []string{"--mode", "rate_limit"}, options{
			addr: "127.0.0.1:9000", shutdownTimeout: 3 * time.Second,
			provider: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Delay: 2 * time.Second, Rate: 0.25, Seed: 7}, Retention: time.Hour},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseConfig(tt.args, environment)

			require.NoError(t, err)
			require.Equal(t, tt.want, opts)
		})
	}
}

func TestParseConfig_InvalidValuesAreRefusedNamingTheirSource(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"rate from env", nil, map[string]string{"FAKEPROVIDER_RATE": "often"}, `invalid value "often" for FAKEPROVIDER_RATE: invalid syntax`},
		{"rate from flag", []string{"--rate", "often"}, nil, `invalid value "often" for --rate: invalid syntax`},
		{"delay from env", nil, map[string]string{"FAKEPROVIDER_DELAY": "5"}, `invalid value "5" for FAKEPROVIDER_DELAY: time: missing unit in duration "5"`},
		{"seed from flag", []string{"--seed=-1"}, nil, `invalid value "-1" for --seed: invalid syntax`},
		{"retention from env", nil, map[string]string{"FAKEPROVIDER_RETENTION": "forever"}, `invalid value "forever" for FAKEPROVIDER_RETENTION: time: invalid duration "forever"`},
		{"shutdown timeout from flag", []string{"--shutdown-timeout", "soon"}, nil, `invalid value "soon" for --shutdown-timeout: time: invalid duration "soon"`},
		{"unknown mode", []string{"--mode", "chaos"}, nil, `invalid settings (--mode=chaos): mode: unknown mode "chaos": want normal, slow, drop, error, lost_response or rate_limit`},
		{"slow without delay", nil, map[string]string{"FAKEPROVIDER_MODE": "slow"}, `invalid settings (FAKEPROVIDER_MODE=slow): mode: mode slow needs a delay greater than 0`},
		{"rate above 1", []string{"--rate", "2"}, nil, `invalid settings (--rate=2): mode: rate must be between 0 and 1, got 2`},
		{"rate NaN", []string{"--rate", "NaN"}, nil, `invalid settings (--rate=NaN): mode: rate must be between 0 and 1, got NaN`},
		{"negative delay", []string{"--delay", "-1s"}, nil, `invalid settings (--delay=-1s): mode: delay must not be negative, got -1s`},
		{"short retention", nil, map[string]string{"FAKEPROVIDER_RETENTION": "10ms"}, `invalid settings (FAKEPROVIDER_RETENTION=10ms): retention must be at least 1s, got 10ms`},
		{"bad addr", []string{"--addr", "8099"}, nil, `invalid settings (--addr=8099): addr must be host:port such as :8099, got "8099"`},
		{"zero shutdown timeout", []string{"--shutdown-timeout", "0s"}, nil, `invalid settings (--shutdown-timeout=0s): shutdown timeout must be positive, got 0s`},
		{"unknown flag", []string{"--colour"}, nil, "flag provided but not defined: -colour"},
		{"stray argument", []string{"serve"}, nil, `unexpected argument "serve"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig(tt.args, env(tt.env))

			require.EqualError(t, err, tt.want)
		})
	}
}

func TestParseConfig_HelpIsFlagErrHelp(t *testing.T) {
	_, err := parseConfig([]string{"--help"}, env(nil))

	require.ErrorIs(t, err, flag.ErrHelp)
}

func TestRun_HelpExplainsEverySettingAndExits0(t *testing.T) {
	var stdout, stderr bytes.Buffer

	code := run(context.Background(), []string{"-h"}, env(nil), &stdout, &stderr)

	require.Equal(t, exitOK, code)
	require.Empty(t, stderr.String())
	for _, s := range settings {
		require.Contains(t, stdout.String(), "--"+s.flag+" (env "+s.env+", default "+s.def+")")
		require.Contains(t, stdout.String(), s.usage)
	}
}

func TestRun_InvalidValueExits2WithAClearMessage(t *testing.T) {
	var stdout, stderr bytes.Buffer

	code := run(context.Background(), nil, env(map[string]string{"FAKEPROVIDER_SEED": "x"}), &stdout, &stderr)

	require.Equal(t, exitUsage, code)
	require.Equal(t, "fakeprovider: invalid value \"x\" for FAKEPROVIDER_SEED: invalid syntax\nRun 'fakeprovider --help' for usage.\n", stderr.String())
	require.Empty(t, stdout.String())
}

// startServe runs serve for p on a loopback port until the returned cancel
// is called; serve's result arrives on the channel.
func startServe(t *testing.T, p *fakeprovider.Provider) (addr string, logs *syncBuffer, cancel context.CancelFunc, served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	logs = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, p, 10*time.Second, slog.New(slog.NewTextHandler(logs, nil))) }()
	return ln.Addr().String(), logs, cancel, done
}

// postCharge sends one charge request and reports its status.
func postCharge(addr, key string) (int, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/charges",
		strings.NewReader(`{"amount":100,"currency":"EUR","source":"tok_visa","merchant_reference":"ref-1"}`))
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

func TestServe_ShutdownDrainsTheChargeInProgress(t *testing.T) {
	waiting := make(chan struct{}, 1)
	release := make(chan time.Time)
	p, err := fakeprovider.New(fakeprovider.Config{
		Mode:  fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Hour},
		After: func(time.Duration) <-chan time.Time { waiting <- struct{}{}; return release },
	})
	require.NoError(t, err)
	addr, logs, cancel, served := startServe(t, p)
	replied := postInBackground(addr, "key-1")
	<-waiting

	cancel()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "shutting down") }, 5*time.Second, time.Millisecond)
	close(release)

	require.NoError(t, <-served)
	r := <-replied
	require.NoError(t, r.err)
	require.Equal(t, http.StatusCreated, r.status)
	require.Len(t, p.Charges(), 1)
	require.Contains(t, logs.String(), "msg=stopped")
}

func TestServe_ShutdownReleasesDroppedRequests(t *testing.T) {
	holding := make(chan struct{}, 1)
	p, err := fakeprovider.New(fakeprovider.Config{
		// With a delay the drop would end in a 504; this one never fires, so
		// only shutdown can end it.
		Mode:  fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: time.Hour},
		After: func(time.Duration) <-chan time.Time { holding <- struct{}{}; return nil },
	})
	require.NoError(t, err)
	addr, _, cancel, served := startServe(t, p)
	replied := postInBackground(addr, "key-1")
	<-holding

	cancel()

	require.NoError(t, <-served, "shutdown must not wait for the held request until its deadline")
	require.Error(t, (<-replied).err)
	require.Empty(t, p.Charges())
}

// syncBuffer collects log output written from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
