package tests

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"chargeonce/dev/cluster"
	"chargeonce/internal/ownerfile"
	"chargeonce/internal/temporalclient"
	"chargeonce/verify/chaos"
)

// The production shape from real parts (package cluster), under real
// process faults: worker and API instances killed with SIGKILL in the middle
// of checkouts, the Temporal server killed and started again on PostgreSQL,
// and PostgreSQL itself restarted. Then the whole cluster stops and starts
// again on the same data, which still holds every order.
func TestCluster_CISizedChaosRunOnRealProcessesKeepsEveryPromise(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster chaos run takes minutes")
	}
	requireClusterPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// PostgreSQL runs as the postgres user, who cannot enter t.TempDir().
	dir, err := os.MkdirTemp("", "chargeonce-cluster-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	placeClusterBinaries(t, dir)

	cfg := chaos.DefaultConfig()
	cfg.Seed = 13
	cfg.Checkouts, cfg.Clients, cfg.ModeSwitches, cfg.LateRetries = 100, 8, 6, 10
	cfg.WorkerKills, cfg.APIKills, cfg.ServerRestarts, cfg.PostgresRestarts = 2, 2, 1, 1
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, nil))
	sum, err := chaos.RunOnCluster(ctx, cfg, dir)
	require.NoError(t, err)
	t.Logf("cluster chaos run summary:\n%s", sum)

	requireEveryPromiseKept(t, sum)
	require.Equal(t, 100, sum.Checkouts)
	for kind, n := range map[string]int{
		chaos.FaultWorkerKill: 2, chaos.FaultAPIKill: 2, chaos.FaultServerRestart: 1, chaos.FaultPostgres: 1, chaos.FaultMode: 6,
	} {
		require.Equal(t, n, sum.Faults[kind], kind)
	}
	require.Equal(t, sum.Checkouts, sum.Report.Orders)
	require.Equal(t, sum.Report.Workflows, sum.Report.Histories, "every workflow history was read")

	// Started again on the same data directory, the cluster finds them all,
	// and no more than one order for each creation sent again during the
	// PostgreSQL outage: its first request may have stored one.
	ports, err := cluster.FreePorts()
	require.NoError(t, err)
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Ports: ports, Env: chaos.Env(cfg)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })
	conn, err := pgx.Connect(ctx, c.DatabaseURL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var orders int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&orders))
	require.GreaterOrEqual(t, orders, sum.Checkouts)
	require.LessOrEqual(t, orders, sum.Checkouts+sum.Behaviours[chaos.BehaviourOrderAgain])

	// The frontend takes mutual TLS only: the tools' certificate gets in, a
	// plain client and a TLS client without a certificate do not.
	noCert := c.TemporalClient()
	noCert.TLSCert, noCert.TLSKey = "", ""
	for name, tc := range map[string]struct {
		cfg  temporalclient.Config
		gets bool
	}{
		"client certificate":        {c.TemporalClient(), true},
		"plain":                     {temporalclient.Config{Address: c.TemporalAddress(), Namespace: cluster.Namespace}, false},
		"TLS without a certificate": {noCert, false},
	} {
		dialCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		cl, err := temporalclient.Dial(dialCtx, tc.cfg, temporalclient.Options{DataConverter: converter.GetDefaultDataConverter()})
		cancel()
		if err == nil {
			cl.Close()
		}
		require.Equal(t, tc.gets, err == nil, "%s: %v", name, err)
	}
}

// placeClusterBinaries copies the shared builds of the cluster's commands to
// where a cluster on dataDir builds them, so that its build links nothing
// that another test has linked already.
func placeClusterBinaries(t *testing.T, dataDir string) {
	t.Helper()
	bin := cluster.Layout{Dir: dataDir}.Bin()
	require.NoError(t, os.MkdirAll(bin, ownerfile.DirMode))
	for _, part := range cluster.Parts(cluster.DefaultPorts(), cluster.Layout{}, cluster.Secrets{}) {
		if part.Package != "" {
			copyBinary(t, buildBinaryAs(t, part.Package, part.Binary), filepath.Join(bin, part.Binary))
		}
	}
}
