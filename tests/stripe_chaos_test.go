package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider/dialect"
	"chargeonce/verify/chaos"
)

// The fault-injection run with the workers speaking Stripe's dialect: worker
// kills, provider mode switches (slow, drop, 5xx, lost answers, 429), lost
// starts and late retries, and not one broken promise.
func TestChaos_StripeDialectKeepsEveryPromise(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	cfg, sum := runChaos(t, 6*time.Minute, func(cfg *chaos.Config) {
		cfg.Seed, cfg.ProviderAPI = 16, dialect.Stripe
		cfg.Checkouts, cfg.WorkerKills, cfg.ServerRestarts = 100, 2, 0
		cfg.ModeSwitches, cfg.LateRetries = 8, 10
		// The fake plants a late charge as its IETF door's charge (ch_…),
		// which its Stripe door, refunding PaymentIntents, cannot refund;
		// the late charges are planted in the IETF runs.
		cfg.LateCharges = 0
	})

	requireEveryPromiseKept(t, sum)
	require.Equal(t, 100, sum.Checkouts)
	require.Equal(t, 2, sum.Faults[chaos.FaultWorkerKill])
	require.Equal(t, 8, sum.Faults[chaos.FaultMode])
	require.Positive(t, sum.Report.ChargeRequests)
	require.Equal(t, sum.Checkouts, sum.Report.Orders)

	// The workers spoke Stripe's dialect.
	logs, err := os.ReadFile(filepath.Join(cfg.DataDir, "worker-1.log"))
	require.NoError(t, err)
	require.Contains(t, string(logs), "provider_api=stripe")
}
