package tests

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"chargeonce"
	"chargeonce/dev/cluster"
	"chargeonce/internal/rollout"
	"chargeonce/internal/temporalclient"
	"chargeonce/verify/chaos"
	"chargeonce/verify/invariant"
)

// drill runs the rollout drill, which make drill asks for: it takes
// minutes, and make test leaves it out.
var drill = flag.Bool("drill", false, "run the rollout drill on the local cluster (make drill)")

// The incompatible change of v2 and the bug of v3, each made to the
// payment workflow's source at the line it names, and built into a worker
// with go build -overlay: the drill's versions are today's code changed as
// a developer would change it.
const (
	chargeLine = "func (p *payment) charge(ctx workflow.Context) (r PaymentResult, recorded bool, err error) {"
	// v2 sleeps before every charge request: a timer that no history of
	// v1 has, so that v2 cannot replay a run that v1 started.
	v2Change = "\n\tif err := workflow.Sleep(ctx, time.Millisecond); err != nil {\n\t\treturn PaymentResult{}, false, err\n\t}"
	// v3 is v2 with a bug: past v2's timer, every payment fails its
	// workflow task, as a nil dereference would. The runs are pinned to v3
	// by then (a run is pinned once its first task completes; until then
	// it follows the deployment's routing, and a rollback alone moves it),
	// and v2 replays what v3 wrote.
	v3Bug = "\n\tpanic(\"a bad version: the payment workflow fails before it charges\")"
)

// TestRolloutDrill_PaymentsInFlightFinishOnTheirVersionAndABadVersionIsRolledBack
// deploys two new versions of the workers on the cluster while customers
// pay, under provider faults and a worker kill, with cmd/rollout's calls:
//
//   - v2, whose payment workflow is incompatible with v1's histories,
//     becomes current while v1's runs are in flight (charges reconciling,
//     refunds pending); they finish on v1, every new run starts on v2, and
//     v1 drains before its workers stop;
//   - v3, which fails every payment, becomes current; the rollback makes
//     v2 current again and moves the runs that reached v3 back to v2,
//     where they finish, and v3 drains before its workers stop.
//
// No workflow task fails as nondeterministic, and the checker finds no
// violation but the failed tasks of v3 itself.
func TestRolloutDrill_PaymentsInFlightFinishOnTheirVersionAndABadVersionIsRolledBack(t *testing.T) {
	if !*drill {
		t.Skip("the rollout drill runs with -drill (make drill)")
	}
	requireClusterPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "chargeonce-drill-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	placeClusterBinaries(t, dir)
	v2 := buildWorkerVariant(t, dir, "worker-v2", chargeLine, v2Change)
	v3 := buildWorkerVariant(t, dir, "worker-v3", chargeLine, v2Change+v3Bug)

	cfg := chaos.DefaultConfig()
	cfg.Seed = 36
	cfg.Checkouts, cfg.Clients, cfg.ModeSwitches, cfg.LateRetries, cfg.LateCharges = 100, 6, 8, 5, 2
	cfg.WorkerKills, cfg.ServerRestarts = 1, 0
	cfg.Deploys = []chaos.Deploy{{BuildID: "v2", WorkerBinary: v2}, {BuildID: "v3", WorkerBinary: v3, Bad: true}}
	cfg.Logger = slog.New(slog.NewTextHandler(testLog{t}, nil))
	ports, err := cluster.FreePorts()
	require.NoError(t, err)
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Ports: ports, Env: chaos.Env(cfg), Logger: cfg.Logger})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop(context.Background())) })

	sum, err := chaos.RunExternal(ctx, cfg, chaos.ClusterStack(c))
	require.NoError(t, err)
	t.Logf("rollout drill summary:\n%s", sum)

	for kind, n := range map[string]int{chaos.FaultDeploy: 2, chaos.FaultDrain: 1, chaos.FaultRollback: 1, chaos.FaultWorkerKill: 1} {
		require.Equal(t, n, sum.Faults[kind], kind)
	}
	require.Len(t, sum.Deploys, 2)
	good, bad := sum.Deploys[0], sum.Deploys[1]
	require.Equal(t, cluster.ClusterBuildID, good.Previous)
	require.Equal(t, "v2", bad.Previous)
	require.NotEmpty(t, bad.Moved, "runs reached the bad version before the rollback")

	// Every promise is kept; the checker's only findings are the failed
	// tasks of v3, each in a run that the rollback moved to v2, and the
	// only late answers are of the orders whose payments v3 held until
	// the rollback.
	held := map[string]bool{}
	for _, v := range sum.Report.Violations {
		if v.Invariant == invariant.WorkflowsHealthy && strings.Contains(v.Message, "workflow code panicked") && slices.Contains(bad.Moved, v.Key) {
			held[fmt.Sprintf("order %d: still pending past its abandon deadline", v.Order)] = true
			continue
		}
		t.Errorf("invariant violation: %+v", v)
	}
	require.NotEmpty(t, held, "the bad version failed the payments that reached it")
	for _, u := range sum.Unexpected {
		require.True(t, held[u], "an answer that breaks the checkout contract: %s", u)
	}
	require.Zero(t, sum.LateRequests, "no key was sent after its retention")
	require.Zero(t, sum.RefundsUnsettled, "every refund that could settle settled by itself")
	require.Zero(t, sum.Attempts[chargeonce.AttemptOpen])

	tc, err := temporalclient.Dial(ctx, c.TemporalClient(), temporalclient.Options{DataConverter: converter.GetDefaultDataConverter()})
	require.NoError(t, err)
	defer tc.Close()
	ro := rollout.New(tc, testLog{t})
	for _, v := range []string{cluster.ClusterBuildID, "v3"} {
		n, err := ro.PinnedRuns(ctx, v)
		require.NoError(t, err)
		require.Zero(t, n, "version %s drained", v)
	}
	var status strings.Builder
	require.NoError(t, rollout.New(tc, &status).Status(ctx))
	require.Contains(t, status.String(), "\ncurrent: v2\n")
	require.Contains(t, status.String(), "\nopen runs with no version: 0\n", "every run is held by a version")

	// Where each run ran. A run is pinned to the version its first
	// workflow task runs on, by the routing the server last heard of: a
	// run started within settle of a change may run on either side of it.
	const settle = 5 * time.Second
	var crossed, crossedRefunds int
	var v1Charged, v2Charged int
	for _, run := range describeRuns(ctx, t, tc) {
		id := run.GetExecution().GetWorkflowId()
		vi := run.GetVersioningInfo()
		require.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, vi.GetBehavior(), id)
		on := vi.GetDeploymentVersion().GetBuildId()
		override := vi.GetVersioningOverride().GetPinned().GetVersion().GetBuildId()
		started, closed := run.GetStartTime().AsTime(), run.GetCloseTime().AsTime()
		// Runs stay open on the current version only, v2 (a refund the
		// provider holds pending).
		if on != "v2" {
			require.NotEqual(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, run.GetStatus(), "%s is still open on %s", id, on)
		}
		// A run moved from v3 completes its next task on v2, and is then
		// listed on v2, with the override that moved it.
		moved := slices.Contains(bad.Moved, id)
		switch on {
		case cluster.ClusterBuildID:
			require.True(t, started.Before(good.Current), "%s started on v1 at %v, after v2 became current at %v", id, started, good.Current)
			require.True(t, closed.Before(good.Drained), "%s closed on v1 after v1 drained", id)
			require.Empty(t, override, id)
			if closed.After(good.Current) {
				crossed++
				if run.GetType().GetName() == "RefundWorkflow" {
					crossedRefunds++
				}
			}
		case "v2":
			require.True(t, started.After(good.Current.Add(-settle)), "%s started on v2 at %v, before v2 became current at %v", id, started, good.Current)
			if moved {
				require.Equal(t, "v2", override, id)
				require.True(t, between(started, bad.Current.Add(-settle), bad.RolledBack), "%s moved from v3, started at %v", id, started)
			} else {
				require.Empty(t, override, id)
			}
		case "v3":
			// Runs that v3's bug does not reach finish there: refunds, and
			// payments that never charge.
			require.Empty(t, override, id)
			require.True(t, between(started, bad.Current.Add(-settle), bad.RolledBack), "%s started on v3 at %v", id, started)
		default:
			t.Fatalf("%s ran on version %q", id, on)
		}
		if between(started, good.Current.Add(settle), bad.Current.Add(-settle)) || started.After(bad.RolledBack.Add(settle)) {
			require.True(t, on == "v2" && !moved, "%s started at %v, while v2 was current, and ran on %s (moved from v3: %v)", id, started, on, moved)
		}
		if between(started, bad.Current.Add(settle), bad.RolledBack.Add(-settle)) {
			require.True(t, on == "v3" || moved, "%s started at %v, while v3 was current, and ran on %s", id, started, on)
		}
		if run.GetType().GetName() != "PaymentWorkflow" {
			continue
		}
		// v2 waits on a timer before each charge, and v1 charges at once:
		// v2's commands differ from the histories that v1 wrote. (A v1 run
		// may wait on a lookup's timer before a customer's retry charges.)
		timerFirst, charged := timerBeforeCharge(ctx, t, tc, run)
		switch {
		case charged && on == "v2":
			require.True(t, timerFirst, "%s charged on v2 without v2's timer", id)
			v2Charged++
		case charged && !timerFirst:
			v1Charged++
		}
	}
	require.Positive(t, crossed, "runs of v1 were in flight when v2 became current, and finished on v1")
	require.Positive(t, crossedRefunds, "refunds of v1 were pending when v2 became current, and finished on v1")
	require.Positive(t, v1Charged)
	require.Positive(t, v2Charged)
	t.Logf("runs of v1 in flight across the deploy: %d (%d refunds); payments that charged on v1: %d, on v2: %d; moved back from v3: %d",
		crossed, crossedRefunds, v1Charged, v2Charged, len(bad.Moved))
}

func between(t, from, to time.Time) bool { return t.After(from) && t.Before(to) }

// requireClusterPostgres skips, or in CI fails, a test of the cluster
// where Debian's PostgreSQL is not installed.
func requireClusterPostgres(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("/usr/lib/postgresql", cluster.PostgresVersion, "bin", "postgres")); err != nil {
		msg := "the cluster runs Debian's PostgreSQL " + cluster.PostgresVersion + ", which is not installed (.ci/postgres.sh installs it): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// buildWorkerVariant builds the worker command into dir/name from today's
// source with insert added after line in workflows/payment.go, through an
// overlay, so that the checkout stays as it is.
func buildWorkerVariant(t *testing.T, dir, name, line, insert string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "workflows", "payment.go"))
	require.NoError(t, err)
	code, err := os.ReadFile(src)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(code), line), "workflows/payment.go has the line the drill changes: %s", line)
	changed := filepath.Join(dir, name+"-payment.go")
	require.NoError(t, os.WriteFile(changed, []byte(strings.Replace(string(code), line, line+insert, 1)), 0o644))
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {src: changed}})
	require.NoError(t, err)
	overlayFile := filepath.Join(dir, name+"-overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o644))
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, chaos.WorkerPackage).CombinedOutput()
	require.NoError(t, err, "go build %s: %s", name, out)
	return bin
}

// describeRuns describes the latest run of every payment and refund
// workflow.
func describeRuns(ctx context.Context, t *testing.T, tc client.Client) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	var ids []string
	var token []byte
	for {
		page, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType IN ('PaymentWorkflow', 'RefundWorkflow')", NextPageToken: token})
		require.NoError(t, err)
		for _, e := range page.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	require.NotEmpty(t, ids)
	runs := make([]*workflowpb.WorkflowExecutionInfo, 0, len(ids))
	for _, id := range ids {
		desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(t, err)
		runs = append(runs, desc.GetWorkflowExecutionInfo())
	}
	return runs
}

// timerBeforeCharge reports whether run's history starts a timer before
// its first charge request, and whether it sends one at all. The first
// charge asks the local-charge version gate, whose marker comes with the
// TemporalChangeVersion search attribute: the payloads of the markers are
// encrypted, the search attributes are not.
func timerBeforeCharge(ctx context.Context, t *testing.T, tc client.Client, run *workflowpb.WorkflowExecutionInfo) (timerFirst, charged bool) {
	t.Helper()
	it := tc.GetWorkflowHistory(ctx, run.GetExecution().GetWorkflowId(), run.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	timer := false
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			timer = true
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			if _, ok := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()["TemporalChangeVersion"]; ok {
				return timer, true
			}
		}
	}
	return false, false
}
