package tests

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/internal/cli"
)

// runStarterBinary runs the starter against the stack's API, with its key
// in the environment, and returns its exit code, stdout and stderr.
func runStarterBinary(t *testing.T, bin string, s *checkoutStack, args ...string) (int, string, string) {
	t.Helper()
	return runBinary(t, bin, []string{cli.EnvName("api") + "=" + s.apiURL, cli.EnvName("api-key") + "=" + s.apiKey}, args...)
}

func TestStarter_ShowsTheTimelineAndExitsByOutcome(t *testing.T) {
	bin := buildBinary(t, "chargeonce/starter")
	// The article's timing at half scale; reconciliation starts 4s after an
	// attempt, for --wait to see.
	timing := articleTiming()
	timing.MinAge, timing.Interval = 4*time.Second, time.Second
	s := startCheckoutStack(t, checkoutStackConfig{Timing: timing, Budget: articleBudget})
	orderLine := regexp.MustCompile(`order (\d+) created: 548\.90 TRY`)

	t.Run("paid exits 0", func(t *testing.T) {
		code, stdout, stderr := runStarterBinary(t, bin, s, "checkout", "--amount", "548.90", "--currency", "TRY", "--card", "tok_visa")
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Regexp(t, orderLine, stdout)
		require.Contains(t, stdout, "attempt 1  201 charged")
		require.Regexp(t, `paid ch_\w+`, stdout)
	})

	t.Run("slow provider draws timeout, 409 and replay", func(t *testing.T) {
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2500 * time.Millisecond}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		code, stdout, stderr := runStarterBinary(t, bin, s, "checkout", "--amount", "548.90", "--currency", "TRY", "--card", "tok_visa")
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Regexp(t, `attempt 1  timeout after 1\.\ds\nattempt 2  409 in flight\nattempt 3  201 replayed\npaid ch_\w+\n`, stdout)
	})

	t.Run("declined exits 3", func(t *testing.T) {
		code, stdout, stderr := runStarterBinary(t, bin, s, "checkout", "--json", "--amount", "548.90", "--currency", "TRY", "--card", "tok_chargeDeclinedInsufficientFunds")
		require.Equal(t, 3, code, "stdout: %s\nstderr: %s", stdout, stderr)
		var out struct {
			OrderID     int64    `json:"orderId"`
			Outcome     string   `json:"outcome"`
			HTTPStatus  int      `json:"httpStatus"`
			DeclineCode string   `json:"declineCode"`
			OrderStatus string   `json:"orderStatus"`
			Timeline    []string `json:"timeline"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &out), "one JSON object on stdout: %s", stdout)
		require.Equal(t, "declined", out.Outcome)
		require.Equal(t, 402, out.HTTPStatus)
		require.Equal(t, "insufficient_funds", out.DeclineCode)
		require.Equal(t, "placed", out.OrderStatus)
		require.Equal(t, []string{"attempt 1  402 declined"}, out.Timeline)
	})

	t.Run("pending exits 4, then another card is a conflict and exits 5, and status shows the order", func(t *testing.T) {
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		code, stdout, stderr := runStarterBinary(t, bin, s, "checkout", "--amount", "548.90", "--currency", "TRY", "--card", "tok_visa")
		require.Equal(t, 4, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Regexp(t, `attempt 1  timeout after 1\.\ds\n`, stdout)
		require.Contains(t, stdout, "pending: the outcome is not known yet")
		m := orderLine.FindStringSubmatch(stdout)
		require.NotNil(t, m)
		id := m[1]

		code, stdout, stderr = runStarterBinary(t, bin, s, "checkout", "--order", id, "--card", "tok_mastercard")
		require.Equal(t, 5, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stdout, "conflict: A previous payment for this order is still being verified.")

		code, stdout, stderr = runStarterBinary(t, bin, s, "status", "--order", id)
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Contains(t, stdout, "order "+id+"  payment_pending  548.90 TRY")
		require.Regexp(t, `key [0-9a-f-]{36}  open`, stdout)
	})

	t.Run("pending with --wait follows the order until reconciliation settles it", func(t *testing.T) {
		// The provider finishes after the 5s budget; a lookup after that
		// finds the charge.
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 6 * time.Second}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		code, stdout, stderr := runStarterBinary(t, bin, s, "checkout", "--amount", "548.90", "--currency", "TRY", "--card", "tok_visa", "--wait", "--wait-timeout", "30s")
		require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		require.Regexp(t, `(?s)attempt 1  timeout after 1\.\ds\nattempt 2  409 in flight\n.*pending: the outcome is not known yet.*\npaid ch_\w+\n$`, stdout)
	})

	t.Run("unreachable API names the address", func(t *testing.T) {
		addr := "http://" + unusedAddress(t)
		code, _, stderr := runStarterBinary(t, bin, &checkoutStack{apiURL: addr}, "status", "--order", "1")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "cannot reach the checkout API at "+addr)
	})
}
