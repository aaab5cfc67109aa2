package invariant_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/invariant"
	"chargeonce/store"
)

// laggingTemporal answers describe calls with the workflows as they are,
// and visibility lists as a lagging visibility store would: nothing for the
// first lag lists, then every workflow, always as still running.
type laggingTemporal struct {
	client.Client // nil: the checker calls nothing else
	workflows     map[string]enumspb.WorkflowExecutionStatus
	lag           int

	mu    sync.Mutex
	lists int
}

func (f *laggingTemporal) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	status, ok := f.workflows[id]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: f.info(id, status)}, nil
}

func (f *laggingTemporal) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	if f.lists <= f.lag {
		return resp, nil
	}
	for id := range f.workflows {
		resp.Executions = append(resp.Executions, f.info(id, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING))
	}
	return resp, nil
}

func (f *laggingTemporal) GetWorkflowHistory(context.Context, string, string, bool, enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	return noEvents{}
}

func (f *laggingTemporal) info(id string, status enumspb.WorkflowExecutionStatus) *workflowpb.WorkflowExecutionInfo {
	return &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-" + id},
		Type:      &commonpb.WorkflowType{Name: "PaymentWorkflow"},
		Status:    status,
	}
}

type noEvents struct{}

func (noEvents) HasNext() bool                          { return false }
func (noEvents) Next() (*historypb.HistoryEvent, error) { return nil, nil }

type noCharges struct{}

func (noCharges) ProviderState(context.Context) (invariant.ProviderState, error) {
	return invariant.ProviderState{}, nil
}

const (
	orderID    = 7
	attemptKey = "0199aaaa-0000-7000-8000-000000000001"
)

// oneOpenAttempt is a merchant database holding one order with one open
// attempt under attemptKey, due to be abandoned in an hour.
type oneOpenAttempt struct {
	store.Store // nil: the checker reads nothing else here
}

func (oneOpenAttempt) GetOrder(_ context.Context, id int64) (store.Order, []store.Attempt, error) {
	if id != orderID {
		return store.Order{}, nil, store.ErrNotFound
	}
	amount := chargeonce.Money{Minor: 2500, Currency: "EUR"}
	return store.Order{ID: orderID, Amount: amount, Status: chargeonce.OrderPaymentPending},
		[]store.Attempt{{
			Key: attemptKey, OrderID: orderID, Amount: amount, Status: chargeonce.AttemptOpen,
			MerchantReference: chargeonce.MerchantReference("shop", orderID, attemptKey),
			AbandonAt:         time.Now().Add(time.Hour),
		}}, nil
}

func TestCheck_WorkflowsAreReadByIDOnceVisibilityCaughtUp(t *testing.T) {
	const running, terminated, failed = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	cases := []struct {
		name      string
		workflows map[string]enumspb.WorkflowExecutionStatus
		lag       int
		// want holds the violations' keys and messages; the attempt's are
		// of its order.
		want      map[string]string
		workflowN int
		lists     int
	}{
		{
			name:      "a terminated workflow is reported while visibility lags and calls it running",
			workflows: map[string]enumspb.WorkflowExecutionStatus{attemptKey: terminated},
			lag:       3,
			want:      map[string]string{attemptKey: "payment workflow was terminated (run run-" + attemptKey + ")"},
			workflowN: 1,
			lists:     4,
		},
		{
			name:      "a running workflow breaks nothing",
			workflows: map[string]enumspb.WorkflowExecutionStatus{attemptKey: running},
			workflowN: 1,
			lists:     1,
		},
		{
			name:  "an attempt whose start was lost has no workflow to wait for",
			lag:   1000,
			lists: 1,
		},
		{
			name:      "a workflow no attempt leads to is found in visibility and read by ID",
			workflows: map[string]enumspb.WorkflowExecutionStatus{attemptKey: running, "stray": failed},
			lag:       1,
			want:      map[string]string{"stray": "payment workflow failed (run run-stray)"},
			workflowN: 2,
			lists:     2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			temporal := &laggingTemporal{workflows: tc.workflows, lag: tc.lag}
			report, err := invariant.Check(t.Context(), invariant.Config{
				Store: oneOpenAttempt{}, Provider: noCharges{}, Temporal: temporal, Interval: time.Second,
			}, []int64{orderID})
			require.NoError(t, err)
			got := map[string]string{}
			for _, v := range report.Violations {
				require.Equal(t, invariant.WorkflowsHealthy, v.Invariant, "%s", report)
				if v.Key == attemptKey {
					require.Equal(t, int64(orderID), v.Order)
				} else {
					require.Zero(t, v.Order)
				}
				got[v.Key] = v.Message
			}
			if tc.want == nil {
				tc.want = map[string]string{}
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.workflowN, report.Workflows)
			require.Equal(t, tc.workflowN, report.Histories)
			require.Equal(t, tc.lists, temporal.lists, "visibility was read until it listed the attempt's workflow")
		})
	}
}

func TestCheck_VisibilityThatNeverCatchesUpIsAnError(t *testing.T) {
	temporal := &laggingTemporal{
		workflows: map[string]enumspb.WorkflowExecutionStatus{attemptKey: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		lag:       1 << 30,
	}
	start := time.Now()
	_, err := invariant.Check(t.Context(), invariant.Config{
		Store: oneOpenAttempt{}, Provider: noCharges{}, Temporal: temporal, Interval: time.Second, VisibilityWait: 300 * time.Millisecond,
	}, []int64{orderID})
	require.EqualError(t, err, "invariant: after 300ms visibility still lacks 1 of the 1 payment workflows read by ID ("+attemptKey+
		"), so the workflows no attempt leads to cannot be listed")
	require.Less(t, time.Since(start), 10*time.Second, "the wait is bounded")
	require.Greater(t, temporal.lists, 1, "visibility was read again before giving up")
}
