package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/internal/logging"
	"chargeonce/internal/syncbuf"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// TestVersioning_ARunIsPinnedToTheCurrentVersionAndANewVersionDoesNotTakeOver
// checks the first deploy and the start of the next: the stack's worker,
// the first of its deployment, made its version current, and a payment
// runs pinned to it. A worker of another build then joins the deployment
// beside it and leaves the current version alone, so that the next
// payment is pinned to the first version too: a new version takes over
// only by the rollout.
func TestVersioning_ARunIsPinnedToTheCurrentVersionAndANewVersionDoesNotTakeOver(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{})
	ctx := t.Context()

	deployment := s.temporal.WorkerDeploymentClient().GetHandle(chargeonce.DeploymentName)
	current := func(t *testing.T) (string, []string) {
		t.Helper()
		desc, err := deployment.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
		require.NoError(t, err)
		var versions []string
		for _, v := range desc.Info.VersionSummaries {
			versions = append(versions, v.Version.BuildID)
		}
		require.NotNil(t, desc.Info.RoutingConfig.CurrentVersion)
		return desc.Info.RoutingConfig.CurrentVersion.BuildID, versions
	}

	require.Equal(t, stack.DevBuildID, paymentPinnedTo(t, s, "tok_visa"))
	cur, _ := current(t)
	require.Equal(t, stack.DevBuildID, cur)

	logs := startWorkerVersion(t, s, "v2")
	require.Contains(t, logs.String(), "worker deployment has a current version")
	require.Contains(t, logs.String(), "current_build_id="+stack.DevBuildID+" build_id=v2 this_version_current=false")
	// The new version is registered, so that what follows is the
	// deployment's routing and not the server's lag.
	require.Eventually(t, func() bool {
		_, versions := current(t)
		return slices.Contains(versions, "v2")
	}, 30*time.Second, 100*time.Millisecond)

	require.Equal(t, stack.DevBuildID, paymentPinnedTo(t, s, "tok_mastercard"), "a new version beside the current one takes no new payment")
	cur, _ = current(t)
	require.Equal(t, stack.DevBuildID, cur)
}

// paymentPinnedTo pays a new order with card and returns the build ID of
// the version its run is pinned to.
func paymentPinnedTo(t *testing.T, s *checkoutStack, card string) string {
	t.Helper()
	res := s.checkout(t, s.createOrder(t, "548.90", "TRY"), card)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var body paidBody
	require.NoError(t, json.Unmarshal(res.body, &body))
	desc, err := s.temporal.DescribeWorkflowExecution(t.Context(), body.IdempotencyKey, "")
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, info.GetBehavior())
	require.Equal(t, chargeonce.DeploymentName, info.GetDeploymentVersion().GetDeploymentName())
	return info.GetDeploymentVersion().GetBuildId()
}

// startWorkerVersion starts a second worker beside the stack's, as the
// version buildID of the deployment, on the stack's Temporal, database and
// provider, and returns its logs. It stops when the test ends.
func startWorkerVersion(t *testing.T, s *checkoutStack, buildID string) *syncbuf.Buffer {
	t.Helper()
	ctx := t.Context()
	timing, err := checkout.ReadTiming(ctx, s.store)
	require.NoError(t, err)
	port, err := dialect.New(dialect.Config{Settings: dialect.Settings{URL: s.providerURL}, HTTPClient: &http.Client{Timeout: time.Minute}, Logger: logging.Discard()})
	require.NoError(t, err)
	providers, err := provider.Single(chargeonce.DefaultProvider, port)
	require.NoError(t, err)
	logs := &syncbuf.Buffer{}
	logger, err := logging.New(logs, "text", "info")
	require.NoError(t, err)
	w, err := worker.Start(ctx, worker.Deps{Client: s.temporal, Providers: providers, Store: s.store, Checkout: s.service,
		Refunds: s.stack.Refunds(), Timing: timing, BuildID: buildID, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return logs
}

// TestVersioning_TheRolloutCommandMovesNewRunsToANewVersionAndBack drives
// a blue-green rollout with cmd/rollout, as an operator does: it refuses a
// version without workers, makes v2 current so that a new payment runs on
// v2 while a payment still open stays pinned to dev, counts that run until
// it is moved to v2 with a pinned override (and so does the worker's gauge
// chargeonce_pinned_runs), moves it again with every run of dev, rolls
// back to dev, and counts a run that no version holds.
func TestVersioning_TheRolloutCommandMovesNewRunsToANewVersionAndBack(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	ctx := t.Context()
	bin := buildBinary(t, "chargeonce/cmd/rollout")
	env := []string{"CHARGEONCE_TEMPORAL_ADDRESS=" + s.stack.TemporalAddress()}
	rollout := func(args ...string) (int, string, string) {
		t.Helper()
		return runBinary(t, bin, env, args...)
	}
	ok := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := rollout(args...)
		require.Zero(t, code, "rollout %v: %s", args, stderr)
		return stdout
	}

	// A payment whose charge the provider drops stays open, reconciling,
	// pinned to the version it started on: dev.
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: 50 * time.Millisecond}))
	open, err := s.service.Checkout(ctx, s.createOrder(t, "100.00", "TRY"), "tok_visa")
	require.NoError(t, err)
	require.Equal(t, checkout.OutcomePending, open.Outcome)
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	openID := workflows.WorkflowID(open.Attempt.Key)

	code, _, stderr := rollout("current", "--build-id", "nosuch")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "rollout: cannot make current version nosuch: it has no pollers")
	require.Contains(t, stderr, "start its workers (--build-id nosuch) first")
	require.Contains(t, ok("status"), "current: "+stack.DevBuildID+"\n", "a refused change changes nothing")
	require.Contains(t, ok("drain", "--build-id", "nosuch"), "version nosuch is not a version of Worker Deployment chargeonce (any more)")

	startWorkerVersion(t, s, "v2")
	// The server takes v2 as current once v2 polls every task queue that
	// dev polls; until then it would refuse the change as missing queues.
	deployment := s.temporal.WorkerDeploymentClient().GetHandle(chargeonce.DeploymentName)
	queues := func(buildID string) []string {
		desc, err := deployment.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID})
		if err != nil {
			return nil
		}
		var names []string
		for _, q := range desc.Info.TaskQueuesInfos {
			names = append(names, q.Name+"/"+strconv.Itoa(int(q.Type)))
		}
		slices.Sort(names)
		return names
	}
	require.Eventually(t, func() bool {
		dev, v2 := queues(stack.DevBuildID), queues("v2")
		return len(dev) > 0 && slices.Equal(dev, v2)
	}, 30*time.Second, 100*time.Millisecond)

	require.Contains(t, ok("ramp", "--build-id", "v2", "--percent", "10"), "version v2 is ramping: 10% of the new runs start on it")
	require.Contains(t, ok("status"), "ramping: v2 at 10%\n")
	require.Contains(t, ok("current", "--build-id", "v2"), "version v2 is current")
	require.Equal(t, "v2", paymentPinnedTo(t, s, "tok_visa"), "a new payment runs on the new current version")

	// The open payment keeps dev from draining; visibility counts it once
	// it has caught up, and so does the worker's gauge.
	require.Eventually(t, func() bool {
		status := ok("status")
		return strings.Contains(status, "current: v2\nramping: none\n") &&
			regexp.MustCompile(`(?m)^version `+stack.DevBuildID+`: -, drainage \S+, open runs pinned: 1$`).MatchString(status)
	}, 20*time.Second, 200*time.Millisecond)
	pinnedGauge := func(buildID string, n int) func() bool {
		return func() bool {
			return strings.Contains(s.metrics(t), "\nchargeonce_pinned_runs{build_id=\""+buildID+"\"} "+strconv.Itoa(n)+"\n")
		}
	}
	require.Eventually(t, pinnedGauge(stack.DevBuildID, 1), 10*time.Second, 200*time.Millisecond, "the gauge counts the open run pinned to dev")
	code, _, stderr = rollout("drain", "--build-id", stack.DevBuildID, "--wait", "1s")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "rollout: version "+stack.DevBuildID+" is not drained after 1s: 1 open run pinned to it")
	code, _, stderr = rollout("drain", "--build-id", "v2")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "version v2 is not drained: it is the current version")

	// The rescue: the open run moves to v2, and dev drains.
	code, _, stderr = rollout("pin", "--workflow-id", openID, "--build-id", "nosuch")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "it has no pollers")
	require.Contains(t, ok("pin", "--workflow-id", openID, "--build-id", "v2"), "workflow "+openID+" is pinned to version v2")
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, openID, "")
	require.NoError(t, err)
	override := desc.GetWorkflowExecutionInfo().GetVersioningInfo().GetVersioningOverride()
	require.Equal(t, "v2", override.GetPinned().GetVersion().GetBuildId())
	require.Equal(t, chargeonce.DeploymentName, override.GetPinned().GetVersion().GetDeploymentName())
	require.Contains(t, ok("drain", "--build-id", stack.DevBuildID, "--wait", "20s"), "version "+stack.DevBuildID+" is drained")
	require.Eventually(t, func() bool { return pinnedGauge(stack.DevBuildID, 0)() && pinnedGauge("v2", 1)() },
		10*time.Second, 200*time.Millisecond, "the gauge counts the moved run on v2 and none on dev")

	require.Contains(t, ok("unpin", "--workflow-id", openID), "workflow "+openID+" has no versioning override")
	desc, err = s.temporal.DescribeWorkflowExecution(ctx, openID, "")
	require.NoError(t, err)
	require.Nil(t, desc.GetWorkflowExecutionInfo().GetVersioningInfo().GetVersioningOverride())

	// The rescue of every run of a version at once: pinned to dev again,
	// the run moves to v2 once visibility lists it on dev.
	require.Eventually(t, func() bool {
		return strings.Contains(ok("pin", "--from", stack.DevBuildID, "--build-id", "v2"), "1 open run of version "+stack.DevBuildID+" pinned to version v2")
	}, 20*time.Second, time.Second)
	desc, err = s.temporal.DescribeWorkflowExecution(ctx, openID, "")
	require.NoError(t, err)
	require.Equal(t, "v2", desc.GetWorkflowExecutionInfo().GetVersioningInfo().GetVersioningOverride().GetPinned().GetVersion().GetBuildId())
	require.Contains(t, ok("unpin", "--workflow-id", openID), "has no versioning override")

	// The rollback, while dev's workers still run.
	require.Contains(t, ok("current", "--build-id", stack.DevBuildID), "version "+stack.DevBuildID+" is current")
	require.Equal(t, stack.DevBuildID, paymentPinnedTo(t, s, "tok_mastercard"))
	require.Contains(t, ok("status"), "current: "+stack.DevBuildID+"\n")

	// A run that no version holds, as one started before the workers
	// joined the deployment, is counted apart: the version gates guard it.
	// This one waits on a queue that no worker polls.
	unversioned, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "unversioned-" + openID, TaskQueue: "no-worker-polls-this"}, "PaymentWorkflow")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(ok("status"), "\nopen runs with no version: 1\n") }, 20*time.Second, 500*time.Millisecond)
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, unversioned.GetID(), "", "counted"))
	require.Eventually(t, func() bool { return strings.Contains(ok("status"), "\nopen runs with no version: 0\n") }, 20*time.Second, 500*time.Millisecond)
}

// A worker against a Temporal server whose Worker Deployments are turned
// off cannot run a payment: it stops at start, and says which setting the
// server needs.
func TestVersioning_AWorkerRefusesAServerWithoutWorkerDeployments(t *testing.T) {
	srv, err := temporalserver.Start(t.Context(), temporalserver.Config{UIPort: -1,
		DynamicConfig: map[string]any{"system.enableDeploymentVersions": false}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	fake, err := fakeprovider.New(fakeprovider.Config{})
	require.NoError(t, err)
	prov := httptest.NewServer(fake)
	t.Cleanup(prov.Close)
	env := append(processEnv(t, srv.FrontendAddress()), "CHARGEONCE_PROVIDER_URL="+prov.URL)
	code, _, stderr := runBinary(t, buildBinary(t, "chargeonce/cmd/temporal-setup"), env[:1])
	require.Zero(t, code, stderr)

	code, _, stderr = runBinary(t, buildBinary(t, "chargeonce/cmd/worker"), env)

	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "the Temporal server refuses Worker Deployments in namespace default")
	require.Contains(t, stderr, "set its dynamic configuration system.enableDeploymentVersions to true")
}
