package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/provider/settlement"
	"chargeonce/store"
	"chargeonce/workflows"
)

// settlementRunWait bounds how long POST /api/settlements/{date}/run waits
// for the run before it answers 202.
const settlementRunWait = time.Minute

func amountOf(minor int64, currency string) *wire.Amount {
	if currency == "" {
		return nil
	}
	return &wire.Amount{Amount: chargeonce.Money{Minor: minor, Currency: currency}.Decimal(), Currency: currency}
}

func newSettlement(run store.SettlementRun, exceptions []store.SettlementException) wire.Settlement {
	b := wire.Settlement{Date: run.Date, Status: string(run.Status), FinishedAt: run.FinishedAt, GraceDays: run.GraceDays,
		Lines: run.Lines, Matched: run.Matched, Awaiting: run.Awaiting, ExceptionCounts: make(map[string]int, len(run.ByKind)),
		Totals: []wire.SettlementTotal{}, Exceptions: []wire.SettlementException{}}
	for kind, n := range run.ByKind {
		b.ExceptionCounts[string(kind)] = n
	}
	for _, t := range run.Totals {
		money := func(minor int64) string { return chargeonce.Money{Minor: minor, Currency: t.Currency}.Decimal() }
		b.Totals = append(b.Totals, wire.SettlementTotal{Currency: t.Currency, Lines: t.Lines, Gross: money(t.Gross), Fee: money(t.Fee), Net: money(t.Net)})
	}
	for _, e := range exceptions {
		b.Exceptions = append(b.Exceptions, wire.SettlementException{Kind: string(e.Kind), ChargeID: e.ChargeID, MerchantReference: e.MerchantReference,
			OrderID: e.OrderID, IdempotencyKey: e.AttemptKey, Line: e.LineNo,
			Reported: amountOf(e.ReportedMinor, e.ReportedCurrency), Expected: amountOf(e.ExpectedMinor, e.ExpectedCurrency), Detail: e.Detail})
	}
	return b
}

// reportDate reads the {date} of a settlement path, by the rule of
// settlement.ParseSettlementDate.
func reportDate(r *http.Request) (string, error) {
	date := r.PathValue("date")
	if _, err := settlement.ParseSettlementDate(date, time.Now()); err != nil {
		return "", badRequest("the settlement date %v", err)
	}
	return date, nil
}

func (s *server) getSettlement(w http.ResponseWriter, r *http.Request) {
	date, err := reportDate(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeSettlement(w, r, date, http.StatusOK)
}

// writeSettlement answers with the recorded settlement of date.
func (s *server) writeSettlement(w http.ResponseWriter, r *http.Request, date string, status int) {
	run, err := s.store.SettlementRun(r.Context(), date)
	if errors.Is(err, store.ErrNotFound) {
		err = &problemError{typ: wire.ProblemNotFound, detail: fmt.Sprintf("%s has not been settled yet: POST /api/settlements/%s/run settles it now", date, date)}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	exceptions, err := s.store.SettlementExceptions(r.Context(), date, store.MaxSettlementBatch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, s.log, status, "application/json", newSettlement(run, exceptions))
}

// runSettlement serves POST /api/settlements/{date}/run: it starts the
// date's SettlementWorkflow, or joins the one running, and answers with the
// result once it is recorded, or 202 with its Location if it takes longer
// than settlementRunWait.
func (s *server) runSettlement(w http.ResponseWriter, r *http.Request) {
	date, err := reportDate(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := decodeJSON(w, r, &wire.SettlementRunRequest{}); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.temporal == nil {
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "this API has no Temporal client to run settlements with"})
		return
	}
	run, err := workflows.RunSettlement(r.Context(), s.temporal, workflows.SettlementInput{Date: date})
	if err != nil {
		s.log.Error("settlement run not started", "date", date, "error", err)
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "the settlement run could not be started: Temporal does not answer"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), settlementRunWait)
	defer cancel()
	err = run.Get(ctx, nil)
	switch {
	case ctx.Err() != nil:
		w.Header().Set("Location", "/api/settlements/"+date)
		writeJSON(w, s.log, http.StatusAccepted, "application/json", wire.SettlementRunning{Date: date, Status: "running", WorkflowID: run.GetID()})
	case err != nil:
		// The workflow's error is for operators, who find it in the log
		// and in the workflow's history; the client learns which run failed.
		s.log.Error("settlement run failed", "date", date, "workflow", run.GetID(), "error", err)
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: fmt.Sprintf("the settlement run %s failed; its history in Temporal says why", run.GetID())})
	default:
		s.writeSettlement(w, r, date, http.StatusOK)
	}
}
