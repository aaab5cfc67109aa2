package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"chargeonce"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/workflows"
)

// TestWorker_LookupsRunOnTheirOwnQueueAtTheRateTheProviderPublishes leaves
// an attempt's outcome unknown and lets reconciliation find its charge: the
// lookups run on the lookup task queue, whose worker polls with the
// provider's published rate, and /metrics shows that queue's backlog.
func TestWorker_LookupsRunOnTheirOwnQueueAtTheRateTheProviderPublishes(t *testing.T) {
	timing := workflows.Timing{
		AttemptTimeout: 500 * time.Millisecond,
		SendBudget:     time.Second,
		RetryInterval:  200 * time.Millisecond,
		MinAge:         2500 * time.Millisecond,
		Interval:       500 * time.Millisecond,
		AbandonAfter:   time.Minute,
	}
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing:     timing,
		Budget:     1500 * time.Millisecond,
		Mode:       fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * time.Second},
		LookupRate: 7,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)
	o := s.waitPaid(t, id)

	var lookups int
	for _, e := range historyOf(t, s, workflows.WorkflowID(o.Attempts[0].IdempotencyKey)) {
		a := e.GetActivityTaskScheduledEventAttributes()
		if a.GetActivityType().GetName() != "FindCharge" {
			continue
		}
		lookups++
		require.Equal(t, chargeonce.LookupTaskQueue, a.GetTaskQueue().GetName())
		require.Equal(t, timing.Interval, a.GetScheduleToStartTimeout().AsDuration(), "a lookup waits at most an Interval for its turn")
	}
	require.Positive(t, lookups, "settled by a lookup")

	desc, err := s.temporal.WorkflowService().DescribeTaskQueue(t.Context(), &workflowservice.DescribeTaskQueueRequest{
		Namespace:     temporalserver.DefaultNamespace,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: chargeonce.LookupTaskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_ACTIVITY,
		ReportConfig:  true,
	})
	require.NoError(t, err)
	require.NotEmpty(t, desc.GetPollers(), "the lookup worker polls its queue")
	for _, p := range desc.GetPollers() {
		require.Equal(t, 7.0, p.GetRatePerSecond(), "poller %s", p.GetIdentity())
	}
	require.Equal(t, float32(7), desc.GetEffectiveRateLimit().GetRequestsPerSecond(), "Temporal enforces the published rate on the queue")

	require.Regexp(t, `(?m)^chargeonce_lookup_backlog\{task_queue="chargeonce-lookups"\} \d+$`, s.metrics(t))
	require.Regexp(t, `(?m)^chargeonce_lookup_backlog_age_seconds\{task_queue="chargeonce-lookups"\} [0-9.e+-]+$`, s.metrics(t))
}
