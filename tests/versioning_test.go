package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
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

	pinnedTo := func(t *testing.T, card string) string {
		t.Helper()
		res := s.checkout(t, s.createOrder(t, "548.90", "TRY"), card)
		require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
		var body paidBody
		require.NoError(t, json.Unmarshal(res.body, &body))
		desc, err := s.temporal.DescribeWorkflowExecution(ctx, body.IdempotencyKey, "")
		require.NoError(t, err)
		info := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
		require.Equal(t, enumspb.VERSIONING_BEHAVIOR_PINNED, info.GetBehavior())
		require.Equal(t, chargeonce.DeploymentName, info.GetDeploymentVersion().GetDeploymentName())
		return info.GetDeploymentVersion().GetBuildId()
	}
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

	require.Equal(t, stack.DevBuildID, pinnedTo(t, "tok_visa"))
	cur, _ := current(t)
	require.Equal(t, stack.DevBuildID, cur)

	timing, err := checkout.ReadTiming(ctx, s.store)
	require.NoError(t, err)
	port, err := dialect.New(dialect.Config{Settings: dialect.Settings{URL: s.providerURL}, HTTPClient: &http.Client{Timeout: time.Minute}, Logger: logging.Discard()})
	require.NoError(t, err)
	providers, err := provider.Single(chargeonce.DefaultProvider, port)
	require.NoError(t, err)
	logs := &syncbuf.Buffer{}
	logger, err := logging.New(logs, "text", "info")
	require.NoError(t, err)
	next, err := worker.Start(ctx, worker.Deps{Client: s.temporal, Providers: providers, Store: s.store, Checkout: s.service,
		Refunds: s.stack.Refunds(), Timing: timing, BuildID: "v2", Logger: logger})
	require.NoError(t, err)
	t.Cleanup(next.Stop)
	require.Contains(t, logs.String(), "worker deployment has a current version")
	require.Contains(t, logs.String(), "current_build_id="+stack.DevBuildID+" build_id=v2 this_version_current=false")
	// The new version is registered, so that what follows is the
	// deployment's routing and not the server's lag.
	require.Eventually(t, func() bool {
		_, versions := current(t)
		return slices.Contains(versions, "v2")
	}, 30*time.Second, 100*time.Millisecond)

	require.Equal(t, stack.DevBuildID, pinnedTo(t, "tok_mastercard"), "a new version beside the current one takes no new payment")
	cur, _ = current(t)
	require.Equal(t, stack.DevBuildID, cur)
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
