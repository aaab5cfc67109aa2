package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/alert"
	"chargeonce/internal/logging"
	"chargeonce/internal/syncbuf"
	"chargeonce/stack"
)

func TestRun_MetricsShowTheAlertCounterAtZero(t *testing.T) {
	keys := "test:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	startCtx, cancelStart := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelStart()
	st, err := stack.Start(startCtx, stack.Config{ExternalWorkers: true, CodecKeys: keys, Logger: logging.Discard()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Close(ctx))
	})

	ctx, stop := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--temporal-address", st.TemporalAddress(),
			"--temporal-namespace", stack.Namespace,
			"--database-url", st.DatabaseURL(),
			"--codec-keys", keys,
			"--provider-url", st.ProviderURL(),
			"--listen", "127.0.0.1:0",
		}, func(string) string { return "" }, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	started := regexp.MustCompile(`msg="worker started" .*listen=(\S+)`)
	var listen string
	require.Eventually(t, func() bool {
		m := started.FindStringSubmatch(stderr.String())
		if m != nil {
			listen = m[1]
		}
		return m != nil
	}, time.Minute, 20*time.Millisecond, "the worker did not start: %s", stderr)

	resp, err := http.Get("http://" + listen + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Before any alert, so that the alert rules see 0 rather than nothing.
	require.Contains(t, string(body), alert.MetricName+`{alert="`+string(alert.ContractViolation)+`"} 0`)
}
