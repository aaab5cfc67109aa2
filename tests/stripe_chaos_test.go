package tests

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/chaos"
	"chargeonce/provider/dialect"
)

// The fault-injection run with the workers speaking Stripe's dialect: worker
// kills, provider mode switches (slow, drop, 5xx, lost answers, 429), lost
// starts and late retries, and not one broken promise.
func TestChaos_StripeDialectKeepsEveryPromise(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	bin, err := chaos.BuildWorker(ctx, t.TempDir())
	require.NoError(t, err)

	cfg := chaos.DefaultConfig()
	cfg.WorkerBinary, cfg.Seed, cfg.DataDir = bin, 16, t.TempDir()
	cfg.ProviderAPI = dialect.Stripe
	cfg.Checkouts, cfg.WorkerKills, cfg.ServerRestarts = 100, 2, 0
	cfg.ModeSwitches, cfg.LateRetries = 8, 10
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, nil))
	sum, err := chaos.Run(ctx, cfg)
	require.NoError(t, err)
	t.Logf("chaos run summary:\n%s", sum)

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
