package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"chargeonce"
	"chargeonce/internal/metrics"
	"chargeonce/internal/syncbuf"
)

// describer answers DescribeTaskQueue with stats or an error, and records
// what it was asked; every other call of the service panics.
type describer struct {
	workflowservice.WorkflowServiceClient
	stats *taskqueuepb.TaskQueueStats
	err   error
	asked []*workflowservice.DescribeTaskQueueRequest
}

func (d *describer) DescribeTaskQueue(ctx context.Context, req *workflowservice.DescribeTaskQueueRequest, _ ...grpc.CallOption) (*workflowservice.DescribeTaskQueueResponse, error) {
	d.asked = append(d.asked, req)
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("asked without a deadline")
	}
	if d.err != nil {
		return nil, d.err
	}
	return &workflowservice.DescribeTaskQueueResponse{Stats: d.stats}, nil
}

func TestLookupBacklog_ReadFromTemporalAtEachScrape(t *testing.T) {
	temporal := &describer{stats: &taskqueuepb.TaskQueueStats{ApproximateBacklogCount: 1234, ApproximateBacklogAge: durationpb.New(90 * time.Second)}}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterLookupBacklog(reg, temporal, "payments", slog.New(slog.DiscardHandler)))

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_lookup_backlog Lookups at the provider that are due but not yet run: tasks waiting on the lookup task queue.
# TYPE chargeonce_lookup_backlog gauge
chargeonce_lookup_backlog 1234
# HELP chargeonce_lookup_backlog_age_seconds How long the oldest lookup waiting on the lookup task queue has waited; 0 when none waits.
# TYPE chargeonce_lookup_backlog_age_seconds gauge
chargeonce_lookup_backlog_age_seconds 90
`), "chargeonce_lookup_backlog", "chargeonce_lookup_backlog_age_seconds"))

	require.Len(t, temporal.asked, 1)
	asked := temporal.asked[0]
	require.Equal(t, "payments", asked.GetNamespace())
	require.Equal(t, chargeonce.LookupTaskQueue, asked.GetTaskQueue().GetName())
	require.Equal(t, enumspb.TASK_QUEUE_TYPE_ACTIVITY, asked.GetTaskQueueType())
	require.True(t, asked.GetReportStats())

	temporal.stats = nil // an empty queue reports no stats
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_lookup_backlog Lookups at the provider that are due but not yet run: tasks waiting on the lookup task queue.
# TYPE chargeonce_lookup_backlog gauge
chargeonce_lookup_backlog 0
`), "chargeonce_lookup_backlog"))
	require.Len(t, temporal.asked, 2, "read again at the next scrape")
}

func TestLookupBacklog_ATemporalThatFailsIsReportedAndLogged(t *testing.T) {
	temporal := &describer{err: errors.New("connection refused")}
	logs := &syncbuf.Buffer{}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterLookupBacklog(reg, temporal, "default", slog.New(slog.NewTextHandler(logs, nil))))

	_, err := reg.Gather()

	require.ErrorContains(t, err, "connection refused")
	require.Contains(t, logs.String(), `level=WARN msg="lookup backlog metrics not collected" task_queue=chargeonce-lookups error="connection refused"`)
}
