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
	"chargeonce/store"
	"chargeonce/verify/invariant"
)

// laggingTemporal answers describe calls with the workflows as they are,
// and visibility lists as a lagging visibility store would: nothing for the
// first lag lists, then visible, or when that is nil every workflow as
// still running.
type laggingTemporal struct {
	client.Client // nil: the checker calls nothing else
	workflows     map[string]enumspb.WorkflowExecutionStatus
	visible       map[string]enumspb.WorkflowExecutionStatus
	lag           int

	mu        sync.Mutex
	lists     int
	described []string
}

func (f *laggingTemporal) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	f.mu.Lock()
	f.described = append(f.described, id)
	f.mu.Unlock()
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
	visible := f.visible
	if visible == nil {
		visible = map[string]enumspb.WorkflowExecutionStatus{}
		for id := range f.workflows {
			visible[id] = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}
	}
	for id, status := range visible {
		resp.Executions = append(resp.Executions, f.info(id, status))
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
// attempt under attemptKey, due to be abandoned in an hour, and no refund.
type oneOpenAttempt struct {
	store.Store // nil: the checker reads nothing else here
}

func (oneOpenAttempt) OrderRefunds(context.Context, int64) ([]store.Refund, error) {
	return nil, nil
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
			Provider:          chargeonce.DefaultProvider,
		}}, nil
}

func TestCheck_WorkflowsAreReadByIDUnlessVisibilityHasThemSettled(t *testing.T) {
	const running, completed, terminated, failed = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED
	type statuses = map[string]enumspb.WorkflowExecutionStatus
	cases := []struct {
		name      string
		workflows statuses
		visible   statuses
		lag       int
		// want holds the violations' keys and messages; the attempt's are
		// of its order.
		want      map[string]string
		workflowN int
		lists     int
		described []string
	}{
		{
			name:      "a workflow terminated a moment ago is reported while visibility calls it running",
			workflows: statuses{attemptKey: terminated},
			want:      map[string]string{attemptKey: "payment workflow was terminated (run run-" + attemptKey + ")"},
			workflowN: 1,
			lists:     1,
			described: []string{attemptKey},
		},
		{
			name:      "visibility is read again until it lists the workflows read by ID",
			workflows: statuses{attemptKey: terminated},
			lag:       3,
			want:      map[string]string{attemptKey: "payment workflow was terminated (run run-" + attemptKey + ")"},
			workflowN: 1,
			lists:     4,
			described: []string{attemptKey},
		},
		{
			name:      "a running workflow breaks nothing",
			workflows: statuses{attemptKey: running},
			workflowN: 1,
			lists:     1,
			described: []string{attemptKey},
		},
		{
			name:      "an attempt whose start was lost has no workflow to wait for",
			lag:       1000,
			lists:     1,
			described: []string{attemptKey},
		},
		{
			name:      "a workflow no attempt leads to is found in visibility and read by ID",
			workflows: statuses{attemptKey: running, "stray": failed},
			lag:       1,
			want:      map[string]string{"stray": "payment workflow failed (run run-stray)"},
			workflowN: 2,
			lists:     2,
			described: []string{attemptKey, "stray"},
		},
		{
			name:      "runs visibility lists as closed are settled and not read again",
			workflows: statuses{attemptKey: completed, "stopped": terminated},
			visible:   statuses{attemptKey: completed, "stopped": terminated},
			want:      map[string]string{"stopped": "payment workflow was terminated (run run-stopped)"},
			workflowN: 2,
			lists:     1,
		},
		{
			name:      "a run that continued as new is followed to its successor",
			workflows: statuses{attemptKey: running},
			visible:   statuses{attemptKey: enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW},
			workflowN: 1,
			lists:     1,
			described: []string{attemptKey},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			temporal := &laggingTemporal{workflows: tc.workflows, visible: tc.visible, lag: tc.lag}
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
			require.ElementsMatch(t, tc.described, temporal.described, "the workflows read by ID")
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
