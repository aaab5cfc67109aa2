package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
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

// SettlementScheduleID is the ID of the Temporal Schedule that settles the
// provider's books every day; the Web UI's Schedules page lists each
// provider's.
func SettlementScheduleID(provider string) string {
	return oneScheduleID + "-" + provider
}

// oneScheduleID is the ID of the one schedule that settled the default
// provider's books before each provider had its own, and the start of
// theirs. A worker deletes it at start (keepSettlementSchedules), as the
// default provider's own schedule settles those books now.
const oneScheduleID = "chargeonce-daily-settlement"

// settlementWorkflowID starts the IDs of the provider's schedule's runs of
// DailySettlementWorkflow, to which the schedule appends the time each was
// due.
func settlementWorkflowID(provider string) string {
	return "settlement-daily-" + provider
}

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

// settlementSchedule is the schedule a worker wants for the provider's
// books. Its action carries no grace period: each run asks the worker for
// its own, which its matching applies too. ensureSettlementSchedule puts it
// in the schedule at each start.
func settlementSchedule(provider string) (client.ScheduleSpec, *client.ScheduleWorkflowAction, client.SchedulePolicies) {
	spec := client.ScheduleSpec{Calendars: []client.ScheduleCalendarSpec{settlementAt}, TimeZoneName: "UTC"}
	action := &client.ScheduleWorkflowAction{
		ID:        settlementWorkflowID(provider),
		Workflow:  workflows.DailySettlementWorkflow,
		Args:      []any{workflows.DailySettlementInput{Provider: provider}},
		TaskQueue: chargeonce.TaskQueue,
	}
	// A day's run that is still going when the next is due is not doubled:
	// the next day's run settles the grace period's days again anyway.
	policies := client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: SettlementCatchupWindow}
	return spec, action, policies
}

// ensureSettlementSchedule creates the provider's daily settlement
// schedule, or updates it to this worker's settings when it exists: every
// worker may call it at start, and the schedule exists once.
func ensureSettlementSchedule(ctx context.Context, c client.Client, provider string, log *slog.Logger) error {
	id := SettlementScheduleID(provider)
	spec, action, policies := settlementSchedule(provider)
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:            id,
		Spec:          spec,
		Action:        action,
		Overlap:       policies.Overlap,
		CatchupWindow: policies.CatchupWindow,
		Note:          fmt.Sprintf("Settles the settlement report of each day of provider %s: see GET /api/settlements/{date}?provider=%s.", provider, provider),
	})
	if err == nil {
		log.Info("settlement schedule created", "schedule", id, "provider", provider)
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("worker: create the settlement schedule of %s: %w", provider, err)
	}
	err = c.ScheduleClient().GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
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
		return fmt.Errorf("worker: update the settlement schedule of %s: %w", provider, err)
	}
	log.Info("settlement schedule updated", "schedule", id, "provider", provider)
	return nil
}

// EnsureSettlementSchedules creates or updates the daily settlement
// schedule of each provider (ensureSettlementSchedule), then deletes the
// one schedule from before each provider had its own: left, it would
// settle the default provider's books a second time. Every worker calls it
// at start (keepSettlementSchedules).
func EnsureSettlementSchedules(ctx context.Context, c client.Client, providers []string, log *slog.Logger) error {
	for _, p := range providers {
		if err := ensureSettlementSchedule(ctx, c, p, log); err != nil {
			return err
		}
	}
	err := c.ScheduleClient().GetHandle(ctx, oneScheduleID).Delete(ctx)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil:
		return fmt.Errorf("worker: delete the settlement schedule %s, which each provider's replaces: %w", oneScheduleID, err)
	}
	log.Info("settlement schedule deleted: each provider's replaces it", "schedule", oneScheduleID)
	return nil
}

// Bounds of keepSettlementSchedules' attempts.
const (
	scheduleCallTimeout = 30 * time.Second
	scheduleRetryFirst  = time.Second
	scheduleRetryMax    = time.Minute
)

// keepSettlementSchedules runs EnsureSettlementSchedules until it succeeds
// or ctx ends. It runs beside the payments rather than before them: a Temporal
// server that has just started serves workflows before its schedules, and
// a worker that refused to start for the settlement would leave payments
// waiting for the books.
func keepSettlementSchedules(ctx context.Context, c client.Client, providers []string, log *slog.Logger) {
	wait := scheduleRetryFirst
	for {
		callCtx, cancel := context.WithTimeout(ctx, scheduleCallTimeout)
		err := EnsureSettlementSchedules(callCtx, c, providers, log)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("the settlement schedules are not set yet; payments go on, and the worker tries again", "error", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, scheduleRetryMax)
	}
}
