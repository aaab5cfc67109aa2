package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/internal/syncbuf"
	"chargeonce/store"
	"chargeonce/verify/invariant"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// settlementView is GET /api/settlements/{date}, as far as these tests read it.
type settlementView struct {
	Provider        string         `json:"provider"`
	Date            string         `json:"date"`
	Status          string         `json:"status"`
	Lines           int            `json:"lines"`
	Matched         int            `json:"matched"`
	Awaiting        int            `json:"awaiting"`
	ExceptionCounts map[string]int `json:"exceptionCounts"`
	Exceptions      []struct {
		Kind     string `json:"kind"`
		ChargeID string `json:"chargeId"`
		Detail   string `json:"detail"`
	} `json:"exceptions"`
}

func (s *checkoutStack) runSettlement(t *testing.T, date string) settlementView {
	t.Helper()
	return s.runSettlementAt(t, "", date)
}

// runSettlementAt settles the date of the provider named by ?provider=,
// or of the default one when provider is empty.
func (s *checkoutStack) runSettlementAt(t *testing.T, provider, date string) settlementView {
	t.Helper()
	path := "/api/settlements/" + date + "/run"
	if provider != "" {
		path += "?provider=" + provider
	}
	res, err := s.send(http.MethodPost, path, "{}")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var v settlementView
	require.NoError(t, json.Unmarshal(res.body, &v))
	return v
}

// A day with one paid order and one charge the merchant never asked for:
// the run through the API finds the charge, says so in the workflow's
// current details, raises the alert and exports the gauge; a rerun gives
// the same result.
func TestSettlement_APIRunFindsAPlantedChargeAndARerunDuplicatesNothing(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{Logs: logs})
	id := s.createOrder(t, "548.90", "TRY")
	require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
	planted, err := s.provider.PlantCharge(fakeprovider.PlantedCharge{Amount: 12000, Currency: "TRY", MerchantReference: "stranger", Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)
	today := time.Now().UTC().Format(time.DateOnly)

	first := s.runSettlement(t, today)

	require.Equal(t, 2, first.Lines)
	require.Equal(t, 1, first.Matched)
	require.Equal(t, map[string]int{"unknown_charge": 1}, first.ExceptionCounts)
	require.Equal(t, planted.ID, first.Exceptions[0].ChargeID)
	require.Contains(t, first.Exceptions[0].Detail, "which no payment attempt made: find the customer and refund charge "+planted.ID)

	resp, err := s.temporal.QueryWorkflow(context.Background(), workflows.SettlementWorkflowID(chargeonce.DefaultProvider, today), "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var meta sdkpb.WorkflowMetadata
	require.NoError(t, resp.Get(&meta))
	require.Equal(t, fmt.Sprintf("Settled default %s final: 2 lines, 1 matched, 0 awaiting their report, 1 exception (unknown_charge 1).", today), meta.GetCurrentDetails())

	rerun := s.runSettlement(t, today)
	require.Equal(t, first, rerun)
	metrics := s.metrics(t)
	require.Contains(t, metrics, `chargeonce_settlement_exceptions{kind="unknown_charge",provider="default"} 1`)
	require.Contains(t, metrics, `chargeonce_alerts_total{alert="unknown_charge"} 2`, "one alert per run that found it")
	require.Contains(t, logs.String(), "alert=unknown_charge")
}

// The worker creates each provider's daily schedule at start and a second
// start finds it and updates it, and deletes the one schedule from before
// each provider had its own; a day the schedule missed is settled by a
// backfill, which runs the day's action as if it had been due then.
func TestSettlement_ScheduleIsCreatedOnceAndAMissedDayIsCaughtUp(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{})
	ctx := context.Background()
	// The one schedule from before, as a worker of that version left it.
	_, err := s.temporal.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: "chargeonce-daily-settlement",
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 24 * time.Hour}}},
		Action: &client.ScheduleWorkflowAction{ID: "settlement-daily", Workflow: workflows.DailySettlementWorkflow,
			Args: []any{workflows.DailySettlementInput{}}, TaskQueue: chargeonce.TaskQueue}})
	require.NoError(t, err)
	// What the second worker's start does.
	require.NoError(t, worker.EnsureSettlementSchedules(ctx, s.temporal, []string{chargeonce.DefaultProvider}, slog.New(slog.NewTextHandler(io.Discard, nil))))

	var ids []string
	require.Eventually(t, func() bool {
		ids = nil
		list, err := s.temporal.ScheduleClient().List(ctx, client.ScheduleListOptions{})
		require.NoError(t, err)
		for list.HasNext() {
			entry, err := list.Next()
			require.NoError(t, err)
			ids = append(ids, entry.ID)
		}
		return slices.Equal(ids, []string{worker.SettlementScheduleID(chargeonce.DefaultProvider)})
	}, 20*time.Second, 100*time.Millisecond, "the provider's schedule is listed, and the one from before is gone")
	handle := s.temporal.ScheduleClient().GetHandle(ctx, worker.SettlementScheduleID(chargeonce.DefaultProvider))
	desc, err := handle.Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, desc.Schedule.Policy.Overlap)
	require.Equal(t, worker.SettlementCatchupWindow, desc.Schedule.Policy.CatchupWindow)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, "DailySettlementWorkflow", action.Workflow)
	require.Len(t, action.Args, 1)

	// Three days ago the provider made a charge that nobody asked for; the
	// schedule never ran since.
	due := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -2).Add(30 * time.Minute)
	missed := due.AddDate(0, 0, -1).Format(time.DateOnly)
	_, err = s.provider.PlantCharge(fakeprovider.PlantedCharge{Amount: 700, Currency: "TRY", MerchantReference: "stranger",
		Status: fakeprovider.ChargeSucceeded, Created: due.Add(-12 * time.Hour)})
	require.NoError(t, err)

	require.NoError(t, handle.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{
		Start: due.Add(-time.Minute), End: due.Add(time.Minute), Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL,
	}}}))

	var daily client.WorkflowRun
	require.Eventually(t, func() bool {
		desc, err := handle.Describe(ctx)
		require.NoError(t, err)
		for _, a := range desc.Info.RecentActions {
			daily = s.temporal.GetWorkflow(ctx, a.StartWorkflowResult.WorkflowID, a.StartWorkflowResult.FirstExecutionRunID)
		}
		return daily != nil
	}, 20*time.Second, 100*time.Millisecond, "the backfill starts the daily run")
	var res workflows.DailySettlementResult
	require.NoError(t, daily.Get(ctx, &res))
	require.Equal(t, []string{missed, due.AddDate(0, 0, -2).Format(time.DateOnly), due.AddDate(0, 0, -3).Format(time.DateOnly)}, res.Dates,
		"the day before the one due, then the grace period's days, newest first")
	require.True(t, strings.HasPrefix(daily.GetID(), "settlement-daily-default-"), daily.GetID())
	run, err := s.store.SettlementRun(ctx, chargeonce.DefaultProvider, missed)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"unknown_charge": 1}, kindsOf(run))
	for _, date := range res.Dates[1:] {
		run, err := s.store.SettlementRun(ctx, chargeonce.DefaultProvider, date)
		require.NoError(t, err, date)
		require.Zero(t, run.Exceptions, date)
	}
}

func kindsOf(run store.SettlementRun) map[string]int {
	kinds := map[string]int{}
	for k, n := range run.ByKind {
		kinds[string(k)] = n
	}
	return kinds
}

// The checker ends a run with the settlement of the day: none of its
// promises is broken when the provider's books are honest, and every
// anomaly planted at the provider is found.
func TestInvariant_SettlementOfTheDayFindsEveryPlantedAnomaly(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	var ids []int64
	for range 5 {
		id := s.createOrder(t, "548.90", "TRY")
		require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
		ids = append(ids, id)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	check := func() invariant.Report {
		report, err := invariant.Check(t.Context(), invariant.Config{Store: s.store, Provider: invariant.InProcess{Provider: s.provider},
			Temporal: s.temporal, Interval: checkInterval, SettlementDates: []string{today}}, ids)
		require.NoError(t, err)
		return report
	}

	s.runSettlement(t, today)
	honest := check()
	require.True(t, honest.OK(), "%s", honest)
	require.Equal(t, 1, honest.Settlements)

	charges := s.provider.Charges()
	alter := func(i int, a fakeprovider.Alteration) {
		a.Date, a.ChargeID = today, charges[i].ID
		require.NoError(t, s.provider.Alter(a))
	}
	alter(0, fakeprovider.Alteration{Action: fakeprovider.AlterDrop})
	alter(1, fakeprovider.Alteration{Action: fakeprovider.AlterChange, Gross: "549.00"})
	alter(2, fakeprovider.Alteration{Action: fakeprovider.AlterChange, Currency: "EUR"})
	alter(3, fakeprovider.Alteration{Action: fakeprovider.AlterDuplicate})
	alter(4, fakeprovider.Alteration{Action: fakeprovider.AlterChange, Gross: "five"})
	planted, err := s.provider.PlantCharge(fakeprovider.PlantedCharge{Amount: 12000, Currency: "TRY", MerchantReference: "stranger", Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)
	s.runSettlement(t, today)

	var found []string
	for _, v := range check().Of(invariant.BooksBalance) {
		found = append(found, v.ChargeID+" "+strings.TrimSuffix(strings.Fields(v.Message)[1], ":"))
	}
	require.ElementsMatch(t, []string{
		charges[1].ID + " amount_mismatch",
		charges[2].ID + " currency_mismatch",
		charges[3].ID + " duplicate_line",
		" malformed_line",
		planted.ID + " unknown_charge",
		// The dropped line and the one that cannot be read leave two
		// attempts in no report; within the grace period that is not an
		// exception yet, but the checker, which knows every charge of the
		// day is in, reports it.
		" 2",
	}, found)
}
