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

// describer answers DescribeTaskQueue with the stats of the queue, by its
// name, or an error, and records what it was asked; every other call of the
// service panics.
type describer struct {
	workflowservice.WorkflowServiceClient
	stats map[string]*taskqueuepb.TaskQueueStats
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
	return &workflowservice.DescribeTaskQueueResponse{Stats: d.stats[req.GetTaskQueue().GetName()]}, nil
}

func TestLookupBacklog_ReadFromTemporalAtEachScrapeForEachQueue(t *testing.T) {
	eu := chargeonce.LookupTaskQueueOf("eu")
	temporal := &describer{stats: map[string]*taskqueuepb.TaskQueueStats{
		chargeonce.LookupTaskQueue: {ApproximateBacklogCount: 1234, ApproximateBacklogAge: durationpb.New(90 * time.Second)},
		eu:                         {ApproximateBacklogCount: 5, ApproximateBacklogAge: durationpb.New(2 * time.Second)},
	}}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterLookupBacklog(reg, temporal, "payments", []string{chargeonce.LookupTaskQueue, eu}, slog.New(slog.DiscardHandler)))

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_lookup_backlog Lookups at the provider that are due but not yet run: tasks waiting on the lookup task queue.
# TYPE chargeonce_lookup_backlog gauge
chargeonce_lookup_backlog{task_queue="chargeonce-lookups"} 1234
chargeonce_lookup_backlog{task_queue="chargeonce-lookups-eu"} 5
# HELP chargeonce_lookup_backlog_age_seconds How long the oldest lookup waiting on the lookup task queue has waited; 0 when none waits.
# TYPE chargeonce_lookup_backlog_age_seconds gauge
chargeonce_lookup_backlog_age_seconds{task_queue="chargeonce-lookups"} 90
chargeonce_lookup_backlog_age_seconds{task_queue="chargeonce-lookups-eu"} 2
`), "chargeonce_lookup_backlog", "chargeonce_lookup_backlog_age_seconds"))

	require.Len(t, temporal.asked, 2)
	for i, queue := range []string{chargeonce.LookupTaskQueue, eu} {
		asked := temporal.asked[i]
		require.Equal(t, "payments", asked.GetNamespace())
		require.Equal(t, queue, asked.GetTaskQueue().GetName())
		require.Equal(t, enumspb.TASK_QUEUE_TYPE_ACTIVITY, asked.GetTaskQueueType())
		require.True(t, asked.GetReportStats())
	}

	delete(temporal.stats, eu) // an empty queue reports no stats
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_lookup_backlog Lookups at the provider that are due but not yet run: tasks waiting on the lookup task queue.
# TYPE chargeonce_lookup_backlog gauge
chargeonce_lookup_backlog{task_queue="chargeonce-lookups"} 1234
chargeonce_lookup_backlog{task_queue="chargeonce-lookups-eu"} 0
`), "chargeonce_lookup_backlog"))
	require.Len(t, temporal.asked, 4, "read again at the next scrape")
}

func TestLookupBacklog_ATemporalThatFailsIsReportedAndLogged(t *testing.T) {
	temporal := &describer{err: errors.New("connection refused")}
	logs := &syncbuf.Buffer{}
	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterLookupBacklog(reg, temporal, "default", []string{chargeonce.LookupTaskQueue}, slog.New(slog.NewTextHandler(logs, nil))))

	_, err := reg.Gather()

	require.ErrorContains(t, err, "connection refused")
	require.Contains(t, logs.String(), `level=WARN msg="lookup backlog metrics not collected" task_queue=chargeonce-lookups error="connection refused"`)
}
