package stripe_test

import (
	"bufio"
	"context"
	"errors"
	"go/build"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
	"chargeonce/provider/stripe"
)

// stripeMockVersion is the stripe-mock that the conformance test runs and
// .ci/run installs.
const stripeMockVersion = "v0.203.0"

// stripeMockBinary finds stripe-mock on PATH or where go install puts it.
func stripeMockBinary() (string, bool) {
	if path, err := exec.LookPath("stripe-mock"); err == nil {
		return path, true
	}
	dirs := []string{os.Getenv("GOBIN")}
	for _, gopath := range filepath.SplitList(build.Default.GOPATH) {
		dirs = append(dirs, filepath.Join(gopath, "bin"))
	}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, "stripe-mock")
		if info, err := os.Stat(path); err == nil && !info.IsDir() {
			return path, true
		}
	}
	return "", false
}

// startStripeMock starts stripe-mock on a loopback port the system chooses
// and returns its base URL. Without stripe-mock the test is skipped, except
// in CI, where it must have been installed.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin, ok := stripeMockBinary()
	if !ok {
		msg := "stripe-mock is not installed: go install github.com/stripe/stripe-mock@" + stripeMockVersion
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Without -strict-version-check: stripe-mock's specification is a
	// later API version than the one stripe-go pins, and the parameters the
	// adapter sends mean the same in both.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	addr := make(chan string, 1)
	var drained sync.WaitGroup
	drained.Go(func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if a, found := strings.CutPrefix(lines.Text(), "Listening for HTTP at address: "); found {
				addr <- a
				break
			}
		}
		// Keep reading, so that stripe-mock never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, out)
	})
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not say where it listens within 30s")
		return ""
	}
}

// statuses records the status of every answer stripe-mock gives, and,
// when keys is not nil, the last idempotency key sent to each method and
// path.
type statuses struct {
	mu   sync.Mutex
	got  []int
	keys map[string]string
}

func (s *statuses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys != nil {
		s.keys[req.Method+" "+req.URL.Path] = req.Header.Get("Idempotency-Key")
	}
	if err == nil {
		s.got = append(s.got, resp.StatusCode)
	}
	return resp, err
}

// key is the last idempotency key sent to route, "METHOD /path".
func (s *statuses) key(route string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[route]
}

// stripe-mock validates every request against Stripe's OpenAPI
// specification and answers 400 to one that breaks it, then answers with
// fixtures that are not our charges. So the adapter's requests conform when
// every answer is a 200, and the adapter reads the fixtures as what they
// are: not the charge it asked for.
func TestClient_RequestsConformToStripesSpecification(t *testing.T) {
	base := startStripeMock(t)
	seen := &statuses{}
	c, err := stripe.New(stripe.Config{
		APIKey:     "sk_test_123",
		BaseURL:    base,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: seen},
	})
	require.NoError(t, err)
	ctx := context.Background()

	res := c.Charge(ctx, testCharge())
	require.True(t, res.Sent)
	require.Equal(t, http.StatusOK, res.StatusCode, res.Detail)
	require.Equal(t, provider.ContractViolation, res.Outcome, "a fixture is not the charge asked for")

	declined := testCharge()
	declined.Key, declined.Source, declined.Description = "another-key", "pm_card_chargeDeclined", ""
	require.Equal(t, http.StatusOK, c.Charge(ctx, declined).StatusCode)

	_, err = c.FindCharges(ctx, testCharge().MerchantReference)
	var perr *provider.Error
	require.True(t, errors.As(err, &perr), "a fixture does not carry our reference: %v", err)
	require.Equal(t, http.StatusOK, perr.StatusCode, perr.Detail)

	require.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusOK}, seen.got)
}

// stripe-mock's refund fixture is a succeeded refund of its own: the
// adapter's refund and its listing of a PaymentIntent's refunds must pass
// the specification's validation (every answer a 200), the fixture's status
// must be read, and the idempotency key must go on the creation.
func TestClient_RefundRequestsConformToStripesSpecification(t *testing.T) {
	base := startStripeMock(t)
	seen := &statuses{keys: map[string]string{}}
	c, err := stripe.New(stripe.Config{
		APIKey:     "sk_test_123",
		BaseURL:    base,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: seen},
	})
	require.NoError(t, err)
	ctx := context.Background()
	for _, reason := range []string{"requested_by_customer", "customer returned the book"} {
		req := testRefund()
		req.Reason = reason

		res := c.Refund(ctx, req)

		require.True(t, res.Sent)
		require.Equal(t, http.StatusOK, res.StatusCode, res.Detail)
		require.Equal(t, provider.ContractViolation, res.Outcome, "a fixture is not the refund asked for")
		// stripe-mock echoes the PaymentIntent and the amount into its
		// fixture, a succeeded refund in USD: only the currency is not ours,
		// so the refund was read whole and its status mapped.
		require.Contains(t, res.Detail, "with a refund that is not the one requested: amount 1250 USD, want 1250 TRY")
		require.Equal(t, req.Key, seen.key("POST /v1/refunds"))
	}

	found, err := c.FindRefunds(ctx, testRefund().ChargeID, testRefund().MerchantReference)
	require.NoError(t, err, "the listing is valid, and the fixture is not of our reference")
	require.Empty(t, found)

	require.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusOK}, seen.got)
}

// A hold, its capture and its cancel, and the retrieval of a
// PaymentIntent, must pass the specification's validation (every answer a
// 200), with the idempotency key on each creation; the fixtures are read
// whole, their statuses mapped, and are not the PaymentIntents asked for.
func TestClient_HoldRequestsConformToStripesSpecification(t *testing.T) {
	base := startStripeMock(t)
	seen := &statuses{keys: map[string]string{}}
	c, err := stripe.New(stripe.Config{
		APIKey:     "sk_test_123",
		BaseURL:    base,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: seen},
	})
	require.NoError(t, err)
	ctx := context.Background()

	hold := testCharge()
	hold.Hold = true
	held := c.Charge(ctx, hold)
	require.Equal(t, http.StatusOK, held.StatusCode, held.Detail)

	capture := testCapture()
	captured := c.Capture(ctx, capture)
	require.True(t, captured.Sent)
	require.Equal(t, http.StatusOK, captured.StatusCode, captured.Detail)
	require.Equal(t, provider.ContractViolation, captured.Outcome, "a fixture is not the capture asked for")
	require.Contains(t, captured.Detail, `with a PaymentIntent that is not the one requested: PaymentIntent pi_000001 has status "requires_payment_method"`)
	require.Equal(t, capture.Key, seen.key("POST /v1/payment_intents/"+capture.ChargeID+"/capture"))

	void := provider.VoidRequest{Key: "void-key", ChargeID: capture.ChargeID}
	voided := c.Void(ctx, void)
	require.True(t, voided.Sent)
	require.Equal(t, http.StatusOK, voided.StatusCode, voided.Detail)
	require.Equal(t, provider.ContractViolation, voided.Outcome, "a fixture is not the void asked for")
	require.Equal(t, void.Key, seen.key("POST /v1/payment_intents/"+void.ChargeID+"/cancel"))

	// stripe-mock echoes the id into its fixture, a PaymentIntent waiting
	// for a payment method: read as a failed charge.
	got, err := c.GetCharge(ctx, capture.ChargeID)
	require.NoError(t, err)
	require.Equal(t, capture.ChargeID, got.ID)
	require.Equal(t, provider.StatusFailed, got.Status)

	require.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK}, seen.got)
}
