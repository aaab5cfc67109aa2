package tests

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/dev/temporalserver"
	"chargeonce/internal/codec"
	"chargeonce/workflows"
)

// The worker and the API check the namespace's search attributes at start:
// a namespace set up by hand, without them, would refuse every payment
// later. temporal-setup registers them, idempotently, after which both start.
func TestTemporalSetup_WorkerAndAPIRefuseANamespaceWithoutTheSearchAttributesUntilSetupRegistersThem(t *testing.T) {
	srv, err := temporalserver.Start(t.Context(), temporalserver.Config{UIPort: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	env := processEnv(t, srv.FrontendAddress())
	const missing = `namespace "default" lacks the search attributes HoldDeadline (Datetime), MerchantReference (Keyword), Operation (Keyword), OrderId (Keyword), PaymentStatus (Keyword), Provider (Keyword), ProviderPaymentId (Keyword)`
	for _, name := range []string{"worker", "api"} {
		code, _, stderr := runBinary(t, buildBinary(t, "chargeonce/cmd/"+name), env)
		require.Equal(t, 1, code, "%s must refuse to start: %s", name, stderr)
		require.Contains(t, stderr, missing)
	}

	setup := buildBinary(t, "chargeonce/cmd/temporal-setup")
	code, stdout, stderr := runBinary(t, setup, env[:1])
	require.Zero(t, code, stderr)
	require.Contains(t, stdout, "namespace default: exists")
	require.Equal(t, len(workflows.SearchAttributes()), strings.Count(stdout, ": added\n"), stdout)

	code, stdout, stderr = runBinary(t, setup, env[:1])
	require.Zero(t, code, stderr)
	require.Equal(t, len(workflows.SearchAttributes()), strings.Count(stdout, ": present\n"), "a second run changes nothing: %s", stdout)

	code, _, stderr = runBinary(t, setup, append(env[:1:1], "CHARGEONCE_RETENTION=1h"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--retention 1h0m0s is shorter than Temporal's minimum of 24h0m0s")

	// The API now starts; it says so, and stops cleanly on SIGTERM.
	api := exec.Command(buildBinary(t, "chargeonce/cmd/api"))
	api.Env = env
	logs, err := api.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, api.Start())
	t.Cleanup(func() { _ = api.Process.Kill() })
	started := make(chan error, 1)
	go func() { started <- waitForLine(logs, "checkout API started") }()
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the API did not start within a minute")
	}
	require.NoError(t, api.Process.Signal(syscall.SIGTERM))
	require.NoError(t, api.Wait())
}

// processEnv is the environment of the worker and the API against the
// Temporal server at temporalAddress, with a database of their own; the
// address comes first, and alone it is temporal-setup's environment.
func processEnv(t *testing.T, temporalAddress string) []string {
	return []string{
		"CHARGEONCE_TEMPORAL_ADDRESS=" + temporalAddress,
		"CHARGEONCE_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "chargeonce.db"),
		"CHARGEONCE_CODEC_KEYS=k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"CHARGEONCE_LISTEN=127.0.0.1:0",
		"CHARGEONCE_CODEC_TOKEN=" + codec.NewToken(),
		"CHARGEONCE_CARD_HASH_KEY=" + chargeonce.NewCardHashKey(),
	}
}

// runBinary runs bin with args and exactly the environment env, and returns
// its exit code, stdout and stderr.
func runBinary(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stdout.String(), stderr.String()
}

// waitForLine reads r until a line contains want, then drains the rest in
// the background so that the writer never blocks.
func waitForLine(r io.Reader, want string) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return nil
		}
	}
	return errors.New("the output ended without a line containing " + want)
}
