package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// SettlementWorkflowID is the workflow ID of the settlement of a
// provider's report date: one run per provider and date at a time, and a
// rerun replaces its result. An empty provider is that of a run started
// before each provider's books were settled apart, which settled the
// default provider's under the ID of its date alone; a provider's name
// starts with a letter and a date with a digit, so the two never meet.
func SettlementWorkflowID(provider, date string) string {
	if provider == "" {
		return "settlement-" + date
	}
	return "settlement-" + provider + "-" + date
}

// ErrTypeBadSettlementInput: the settlement's input is malformed. Not
// retryable.
const ErrTypeBadSettlementInput = "BadSettlementInput"

// SettlementInput is the input of SettlementWorkflow. A run started with an
// earlier input that also carried GraceDays still decodes: JSON drops the
// unknown field, and the worker's grace period applies.
type SettlementInput struct {
	// Provider names the provider whose report is settled. Empty, in the
	// runs started before each provider's books were settled apart, means
	// the worker's default provider (activities.Settlement.Default).
	Provider string `json:"Provider,omitempty"`
	// Date is the report date, as in 2026-03-14 (UTC).
	Date string `json:"Date"`
}

// SettlementResult is what a settlement run found: its provider and date,
// and the activities.MatchReportResult that MatchReport recorded for it,
// field by field.
type SettlementResult struct {
	Provider   string                           `json:"Provider,omitempty"`
	Date       string                           `json:"Date"`
	Status     store.SettlementStatus           `json:"Status"`
	Lines      int                              `json:"Lines"`
	Matched    int                              `json:"Matched"`
	Awaiting   int                              `json:"Awaiting"`
	Exceptions int                              `json:"Exceptions"`
	ByKind     map[chargeonce.ExceptionKind]int `json:"ByKind"`
	Totals     []store.SettlementTotal          `json:"Totals"`
}

// newSettlementResult is the result of the run of in whose MatchReport
// found m.
func newSettlementResult(in SettlementInput, m activities.MatchReportResult) SettlementResult {
	return SettlementResult{Provider: in.Provider, Date: in.Date, Status: m.Status, Lines: m.Lines, Matched: m.Matched, Awaiting: m.Awaiting,
		Exceptions: m.Exceptions, ByKind: m.ByKind, Totals: m.Totals}
}

// Summary is one line for people: what the run found.
func (r SettlementResult) Summary() string {
	var kinds []string
	for _, kind := range chargeonce.ExceptionKinds {
		if n := r.ByKind[kind]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", kind, n))
		}
	}
	found := "no exceptions"
	if r.Exceptions > 0 {
		found = fmt.Sprintf("%s (%s)", chargeonce.Plural(r.Exceptions, "exception"), strings.Join(kinds, ", "))
	}
	books := r.Date
	if r.Provider != "" {
		books = r.Provider + " " + r.Date
	}
	return fmt.Sprintf("%s %s: %s, %d matched, %d awaiting their report, %s", books, r.Status, chargeonce.Plural(r.Lines, "line"), r.Matched, r.Awaiting, found)
}

// settlementActs names the settlement activities for ExecuteActivity; it is
// never dereferenced.
var settlementActs *activities.Settlement

// RegisterSettlement registers the settlement workflows and activities with
// a worker of chargeonce.TaskQueue.
func RegisterSettlement(r worker.Registry, s *activities.Settlement) {
	registerSettlementWorkflows(r)
	r.RegisterActivity(s)
}

// registerSettlementWorkflows registers the workflows of
// RegisterSettlement, which NewReplayer registers too.
func registerSettlementWorkflows(r worker.WorkflowRegistry) {
	registerWorkflow(r, SettlementWorkflow)
	registerWorkflow(r, DailySettlementWorkflow)
}

// settlementActivityOptions let a long report take its time while a stuck
// download or match is noticed by its missed heartbeats.
// SettlementActivityTimeout bounds one attempt of a settlement activity,
// such as a report's whole download.
const SettlementActivityTimeout = time.Hour

var settlementActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout: SettlementActivityTimeout,
	HeartbeatTimeout:    2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        5 * time.Second,
		MaximumInterval:        5 * time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeReportUnreadable, activities.ErrTypeInvalidRequest},
	},
}

// SettlementWorkflow settles one provider's report date: StageReport
// downloads the provider's report into the store, and MatchReport matches
// it against the day's succeeded attempts at that provider and records the
// result, which replaces any earlier run's of the provider's date. Its current details say what it is doing, and then what it
// found.
func SettlementWorkflow(ctx workflow.Context, in SettlementInput) (SettlementResult, error) {
	if _, err := settlement.ParseDate(in.Date); err != nil {
		return SettlementResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("settlement: need a report date such as 2026-03-14, got %q", in.Date),
			ErrTypeBadSettlementInput, nil)
	}
	ctx = workflow.WithActivityOptions(ctx, settlementActivityOptions)
	report := "the settlement report of " + in.Date
	if in.Provider != "" {
		report = in.Provider + "'s settlement report of " + in.Date
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Downloading %s.", report))
	var staged activities.StageReportResult
	stage := activities.StageReportInput{Provider: in.Provider, Date: in.Date}
	if err := workflow.ExecuteActivity(ctx, settlementActs.StageReport, stage).Get(ctx, &staged); err != nil {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("%s could not be staged: %v", report, err))
		return SettlementResult{}, err
	}
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Matching %s: %s (%d malformed).", report, chargeonce.Plural(staged.Lines, "line"), staged.Malformed))
	match := activities.MatchReportInput{Provider: in.Provider, Date: in.Date, RunID: workflow.GetInfo(ctx).WorkflowExecution.RunID}
	var matched activities.MatchReportResult
	if err := workflow.ExecuteActivity(ctx, settlementActs.MatchReport, match).Get(ctx, &matched); err != nil {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("%s could not be matched: %v", report, err))
		return SettlementResult{}, err
	}
	res := newSettlementResult(in, matched)
	workflow.SetCurrentDetails(ctx, "Settled "+res.Summary()+".")
	workflow.GetLogger(ctx).Info("settlement run finished", "provider", in.Provider, "date", in.Date, "status", res.Status,
		"matched", res.Matched, "awaiting", res.Awaiting, "exceptions", res.Exceptions)
	return res, nil
}

// DailySettlementInput is the input of DailySettlementWorkflow, fixed in the
// schedule's action. The grace period is the worker's
// (activities.Settlement.GraceDays).
type DailySettlementInput struct {
	// Provider names the provider whose books the run settles: each
	// provider has a schedule of its own. Empty in the runs of the one
	// schedule that settled the default provider's before.
	Provider string `json:"Provider,omitempty"`
	// GraceDays is the grace period that schedules created before
	// changeWorkersGracePeriod passed. Only the runs started before that
	// change read it, on replay; it goes with the gate.
	GraceDays int `json:"GraceDays,omitempty"`
}

// DailySettlementResult lists the dates settled.
type DailySettlementResult struct {
	Dates []string `json:"Dates"`
}

// changeWorkersGracePeriod is the workflow.GetVersion change after which
// the daily run asks the worker for the grace period (the GracePeriod local
// activity) instead of reading it from the schedule's argument, which had
// carried a copy of the worker's setting. Like the payment's gates (see
// PaymentWorkflow) it retires once no run started before it can still be
// open: a daily run lasts as long as its dates' settlements, and while one
// is open the schedule starts no other, so the sign is that no open
// DailySettlementWorkflow started before the change is left.
const (
	changeWorkersGracePeriod                  = "workers-grace-period"
	workersGracePeriod       workflow.Version = 1
)

// gracePeriodTimeout bounds the GracePeriod local activity, which only
// reads a field.
const gracePeriodTimeout = 10 * time.Second

// graceDays is the grace period the daily run settles again: the worker's,
// or, for a run started before changeWorkersGracePeriod, the schedule's
// argument.
func graceDays(ctx workflow.Context, in DailySettlementInput) (int, error) {
	if workflow.GetVersion(ctx, changeWorkersGracePeriod, workflow.DefaultVersion, workersGracePeriod) == workflow.DefaultVersion {
		return in.GraceDays, nil
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: gracePeriodTimeout})
	var res activities.GracePeriodResult
	if err := workflow.ExecuteLocalActivity(lctx, settlementActs.GracePeriod).Get(ctx, &res); err != nil {
		return 0, err
	}
	return res.Days, nil
}

// scheduledStartTime is the search attribute that a schedule sets on the
// workflows it starts: the time the action was due, also for a catch-up or
// a backfill that runs later.
var scheduledStartTime = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// DailySettlementWorkflow is the action of a provider's schedule. For the
// day before the time it was due (its own time when it was not scheduled)
// it runs SettlementWorkflow of its provider as a child, with the
// provider's date's workflow ID, and so again
// for each of the worker's grace period's days before it, newest first:
// their runs become final once the grace period is over, and a day that the
// schedule skipped is settled by the next day's run. A date whose
// settlement is already running is left to that run.
func DailySettlementWorkflow(ctx workflow.Context, in DailySettlementInput) (DailySettlementResult, error) {
	due, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(scheduledStartTime)
	if !ok {
		due = workflow.Now(ctx)
	}
	day := due.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	var res DailySettlementResult
	grace, err := graceDays(ctx, in)
	if err != nil {
		return res, err
	}
	for back := range max(grace, 0) + 1 {
		date := day.AddDate(0, 0, -back).Format(settlement.DateLayout)
		child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            SettlementWorkflowID(in.Provider, date),
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		})
		err := workflow.ExecuteChildWorkflow(child, SettlementWorkflow, SettlementInput{Provider: in.Provider, Date: date}).Get(ctx, nil)
		var running *temporal.ChildWorkflowExecutionAlreadyStartedError
		switch {
		case errors.As(err, &running):
			workflow.GetLogger(ctx).Info("settlement already running; left to that run", "provider", in.Provider, "date", date)
		case err != nil:
			return res, err
		default:
			res.Dates = append(res.Dates, date)
		}
	}
	return res, nil
}

// RunSettlement starts the SettlementWorkflow of in.Provider's in.Date, or
// joins the one running for them, and returns the run: a run of a date
// settled before replaces its result.
func RunSettlement(ctx context.Context, c client.Client, in SettlementInput) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       SettlementWorkflowID(in.Provider, in.Date),
		TaskQueue:                chargeonce.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, SettlementWorkflow, in)
}
