package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"chargeonce"
	"chargeonce/workflows"
)

// DefaultSettlementGraceDays is how many days after its date a charge may
// first appear in a settlement report before its attempt is
// missing_in_report, unless the worker is told otherwise
// (Deps.SettlementGraceDays): providers put a charge made just before
// midnight, or settled late, in a later day's report.
const DefaultSettlementGraceDays = 2

// SettlementScheduleID is the ID of the Temporal Schedule that settles every
// day; the Web UI's Schedules page lists it.
const SettlementScheduleID = "chargeonce-daily-settlement"

// settlementWorkflowID starts the IDs of the schedule's runs of
// DailySettlementWorkflow, to which the schedule appends the time each was
// due.
const settlementWorkflowID = "settlement-daily"

// SettlementCatchupWindow is how far back a schedule that could not run
// (Temporal was down) still takes its missed actions when it comes back:
// a week of days.
const SettlementCatchupWindow = 7 * 24 * time.Hour

// settlementAt is when the daily run is due, in UTC: a little after
// midnight, once the provider has published the report of the day before.
var settlementAt = client.ScheduleCalendarSpec{
	Hour:    []client.ScheduleRange{{Start: 0}},
	Minute:  []client.ScheduleRange{{Start: 30}},
	Comment: "every day at 00:30 UTC",
}

// settlementSchedule is the schedule a worker wants. Its action carries no
// grace period: each run asks the worker for its own, which its matching
// applies too. EnsureSettlementSchedule puts it in the schedule at each
// start, which also clears the grace period that schedules created before
// carried in their argument.
func settlementSchedule() (client.ScheduleSpec, *client.ScheduleWorkflowAction, client.SchedulePolicies) {
	spec := client.ScheduleSpec{Calendars: []client.ScheduleCalendarSpec{settlementAt}, TimeZoneName: "UTC"}
	action := &client.ScheduleWorkflowAction{
		ID:        settlementWorkflowID,
		Workflow:  workflows.DailySettlementWorkflow,
		Args:      []any{workflows.DailySettlementInput{}},
		TaskQueue: chargeonce.TaskQueue,
	}
	// A day's run that is still going when the next is due is not doubled:
	// the next day's run settles the grace period's days again anyway.
	policies := client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: SettlementCatchupWindow}
	return spec, action, policies
}

// EnsureSettlementSchedule creates the daily settlement schedule, or updates
// it to this worker's settings when it exists: every worker may call it at
// start, and the schedule exists once.
func EnsureSettlementSchedule(ctx context.Context, c client.Client, log *slog.Logger) error {
	spec, action, policies := settlementSchedule()
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:            SettlementScheduleID,
		Spec:          spec,
		Action:        action,
		Overlap:       policies.Overlap,
		CatchupWindow: policies.CatchupWindow,
		Note:          "Settles the provider's settlement report of each day: see GET /api/settlements/{date}.",
	})
	if err == nil {
		log.Info("settlement schedule created", "schedule", SettlementScheduleID)
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("worker: create the settlement schedule: %w", err)
	}
	err = c.ScheduleClient().GetHandle(ctx, SettlementScheduleID).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec, s.Action = &spec, action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap, s.Policy.CatchupWindow = policies.Overlap, policies.CatchupWindow
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("worker: update the settlement schedule: %w", err)
	}
	log.Info("settlement schedule updated", "schedule", SettlementScheduleID)
	return nil
}

// Bounds of keepSettlementSchedule's attempts.
const (
	scheduleCallTimeout = 30 * time.Second
	scheduleRetryFirst  = time.Second
	scheduleRetryMax    = time.Minute
)

// keepSettlementSchedule runs EnsureSettlementSchedule until it succeeds or
// ctx ends. It runs beside the payments rather than before them: a Temporal
// server that has just started serves workflows before its schedules, and
// a worker that refused to start for the settlement would leave payments
// waiting for the books.
func keepSettlementSchedule(ctx context.Context, c client.Client, log *slog.Logger) {
	wait := scheduleRetryFirst
	for {
		callCtx, cancel := context.WithTimeout(ctx, scheduleCallTimeout)
		err := EnsureSettlementSchedule(callCtx, c, log)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("the settlement schedule is not set yet; payments go on, and the worker tries again", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, scheduleRetryMax)
	}
}
