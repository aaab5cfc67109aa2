package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	deploymentpb "go.temporal.io/api/deployment/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"

	"chargeonce"
	"chargeonce/internal/metrics"
	"chargeonce/internal/syncbuf"
)

// deployment answers DescribeWorkerDeployment with its versions, or
// describeErr, and CountWorkflowExecutions with the count of the query, or
// countErr, and records the queries; every other call of the service
// panics.
type deployment struct {
	workflowservice.WorkflowServiceClient
	versions    []string
	counts      map[string]int64
	describeErr error
	countErr    error
	queries     []string
}

func (d *deployment) DescribeWorkerDeployment(ctx context.Context, req *workflowservice.DescribeWorkerDeploymentRequest, _ ...grpc.CallOption) (*workflowservice.DescribeWorkerDeploymentResponse, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("asked without a deadline")
	}
	if req.GetNamespace() != "payments" || req.GetDeploymentName() != chargeonce.DeploymentName {
		return nil, errors.New("asked about another deployment")
	}
	if d.describeErr != nil {
		return nil, d.describeErr
	}
	info := &deploymentpb.WorkerDeploymentInfo{Name: chargeonce.DeploymentName}
	for _, id := range d.versions {
		info.VersionSummaries = append(info.VersionSummaries, &deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary{
			DeploymentVersion: &deploymentpb.WorkerDeploymentVersion{DeploymentName: chargeonce.DeploymentName, BuildId: id},
		})
	}
	return &workflowservice.DescribeWorkerDeploymentResponse{WorkerDeploymentInfo: info}, nil
}

func (d *deployment) CountWorkflowExecutions(ctx context.Context, req *workflowservice.CountWorkflowExecutionsRequest, _ ...grpc.CallOption) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("asked without a deadline")
	}
	if req.GetNamespace() != "payments" {
		return nil, errors.New("asked in another namespace")
	}
	d.queries = append(d.queries, req.GetQuery())
	if d.countErr != nil {
		return nil, d.countErr
	}
	return &workflowservice.CountWorkflowExecutionsResponse{Count: d.counts[req.GetQuery()]}, nil
}

func TestPinnedRuns_CountedForEachVersionAtEachScrape(t *testing.T) {
	temporal := &deployment{versions: []string{"v1", "v2"}, counts: map[string]int64{
		chargeonce.PinnedRunsQuery("v1"): 3,
		chargeonce.PinnedRunsQuery("v2"): 40,
	}}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterPinnedRuns(reg, temporal, "payments", slog.New(slog.DiscardHandler)))

	want := func(v1 int) io.Reader {
		return strings.NewReader(fmt.Sprintf(`
# HELP chargeonce_pinned_runs Open workflow runs pinned to the version of the Worker Deployment chargeonce with this build ID.
# TYPE chargeonce_pinned_runs gauge
chargeonce_pinned_runs{build_id="v1"} %d
chargeonce_pinned_runs{build_id="v2"} 40
`, v1))
	}

	require.NoError(t, testutil.GatherAndCompare(reg, want(3), "chargeonce_pinned_runs"))
	require.Equal(t, []string{chargeonce.PinnedRunsQuery("v1"), chargeonce.PinnedRunsQuery("v2")}, temporal.queries)

	temporal.counts[chargeonce.PinnedRunsQuery("v1")] = 0
	require.NoError(t, testutil.GatherAndCompare(reg, want(0), "chargeonce_pinned_runs"))
	require.Len(t, temporal.queries, 4, "counted again at the next scrape")
}

func TestPinnedRuns_NoSeriesBeforeTheDeploymentExists(t *testing.T) {
	temporal := &deployment{describeErr: serviceerror.NewNotFound("no such deployment")}
	logs := &syncbuf.Buffer{}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterPinnedRuns(reg, temporal, "payments", slog.New(slog.NewTextHandler(logs, nil))))

	n, err := testutil.GatherAndCount(reg, "chargeonce_pinned_runs")

	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, logs.String())
}

func TestPinnedRuns_ATemporalThatFailsIsReportedAndLogged(t *testing.T) {
	for name, temporal := range map[string]*deployment{
		"describe": {describeErr: errors.New("connection refused")},
		"count":    {versions: []string{"v1"}, countErr: errors.New("connection refused")},
	} {
		t.Run(name, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			reg := metrics.NewRegistry()
			require.NoError(t, metrics.RegisterPinnedRuns(reg, temporal, "payments", slog.New(slog.NewTextHandler(logs, nil))))

			_, err := reg.Gather()

			require.ErrorContains(t, err, "connection refused")
			require.Contains(t, logs.String(), `level=WARN msg="pinned runs metrics not collected"`)
			require.Contains(t, logs.String(), `error="connection refused"`)
		})
	}
}
