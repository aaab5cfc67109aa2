package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/workflows"
)

// TestPaymentWorkflow_ARequestThatNoLongerFitsTheBudgetIsNotSent: the
// workflow task after the wait between two charge requests may run late, as
// it does when the worker that held it died. By then a whole request may no
// longer fit the charge budget, and the charge phase ends instead of
// scheduling one with the time that is left, or none.
func TestPaymentWorkflow_ARequestThatNoLongerFitsTheBudgetIsNotSent(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	env := activitiestest.New(t, activitiestest.Options{
		Fake:    fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}},
		Breaker: provider.BreakerConfig{ConsecutiveFailures: 1000},
	})
	const queue = "late-charge-phase"
	newWorker := func() sdkworker.Worker {
		w := sdkworker.New(s.temporal, queue, sdkworker.Options{})
		workflows.Register(w, env.Activities)
		require.NoError(t, w.Start())
		return w
	}
	intent := env.NewIntent(t, "tok_visa", chargeonce.Money{Minor: 54890, Currency: "TRY"}, time.Now())
	// One request, then a second after the 1s wait, if it runs on time:
	// 0s + 1s + 1s fits the 3s budget.
	timing := workflows.Timing{AttemptTimeout: time.Second, SendBudget: 3 * time.Second, RetryInterval: time.Second,
		MinAge: 2 * time.Minute, Interval: time.Minute, AbandonAfter: 30 * time.Minute}
	w := newWorker()
	started := time.Now()
	run, err := s.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: workflows.WorkflowID(intent.Key), TaskQueue: queue},
		workflows.PaymentWorkflow, workflows.PaymentInput{Intent: intent, Timing: timing})
	require.NoError(t, err)

	// The worker dies while the workflow waits for its second request, and
	// is back only once the budget has passed.
	require.Eventually(t, func() bool {
		events := historyOf(t, s, intent.Key)
		return events[len(events)-1].GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED
	}, 10*time.Second, 20*time.Millisecond)
	w.Stop()
	require.Eventually(t, func() bool { return time.Since(started) > timing.SendBudget }, 10*time.Second, 50*time.Millisecond)
	t.Cleanup(newWorker().Stop)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var res workflows.PaymentResult
	require.NoError(t, run.Get(ctx, &res), "a workflow task that cannot complete holds the payment")
	require.Equal(t, chargeonce.AttemptNotProcessed, res.Status)
	require.Len(t, env.ChargeKeys(), 1, "the request that no longer fitted was not sent")
	for _, ev := range historyOf(t, s, intent.Key) {
		require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, ev.GetEventType(), "no workflow task failed")
	}
}
