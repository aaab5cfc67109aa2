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

// newSettlement shows a run with its first exceptions, each with its
// resolution when resolutions holds one (by store.ExceptionID).
func newSettlement(run store.SettlementRun, exceptions []store.SettlementException, resolutions map[string]store.ExceptionResolution) wire.Settlement {
	b := wire.Settlement{Date: run.Date, Status: string(run.Status), FinishedAt: run.FinishedAt, GraceDays: run.GraceDays,
		Lines: run.Lines, Matched: run.Matched, Awaiting: run.Awaiting, ExceptionCounts: make(map[string]int, len(run.ByKind)),
		Totals: []wire.SettlementTotal{}, Exceptions: []wire.SettlementException{}}
	for kind, n := range run.ByKind {
		b.ExceptionCounts[string(kind)] = n
		b.OpenExceptions += n
	}
	for _, t := range run.Totals {
		money := func(minor int64) string { return chargeonce.Money{Minor: minor, Currency: t.Currency}.Decimal() }
		b.Totals = append(b.Totals, wire.SettlementTotal{Currency: t.Currency, Lines: t.Lines, Gross: money(t.Gross), Fee: money(t.Fee), Net: money(t.Net)})
	}
	for _, e := range exceptions {
		id := store.ExceptionID(run.Date, e)
		x := wire.SettlementException{Kind: string(e.Kind), ChargeID: e.ChargeID, MerchantReference: e.MerchantReference,
			OrderID: e.OrderID, IdempotencyKey: e.AttemptKey, Line: e.LineNo,
			Reported: amountOf(e.ReportedMinor, e.ReportedCurrency), Expected: amountOf(e.ExpectedMinor, e.ExpectedCurrency), Detail: e.Detail,
			ID: id}
		// Only the exceptions listed can be resolved through the API, which
		// finds them by their id in this list.
		if res, ok := resolutions[id]; ok {
			body := newResolution(res)
			x.Resolution = &body
			b.OpenExceptions--
		}
		b.Exceptions = append(b.Exceptions, x)
	}
	b.OpenExceptions = max(b.OpenExceptions, 0)
	return b
}

// newResolution shows the resolution of an exception.
func newResolution(r store.ExceptionResolution) wire.ExceptionResolution {
	return wire.ExceptionResolution{ExceptionID: r.ExceptionID, Date: r.Date, Note: r.Note,
		ResolvedBy: wire.KeyRef{KeyID: r.KeyID, KeyName: r.KeyName}, ResolvedAt: r.At.UTC()}
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
	run, exceptions, err := s.settlementOf(r.Context(), date)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resolutions, err := s.store.ExceptionResolutions(r.Context(), date)
	if err != nil {
		s.fail(w, r, fmt.Errorf("settlement %s: resolutions: %w", date, err))
		return
	}
	writeJSON(w, s.log, status, "application/json", newSettlement(run, exceptions, resolutions))
}

// settlementOf reads the recorded settlement of date and its first
// exceptions, the ones the API shows; a date never settled is a 404.
func (s *server) settlementOf(ctx context.Context, date string) (store.SettlementRun, []store.SettlementException, error) {
	run, err := s.store.SettlementRun(ctx, date)
	if errors.Is(err, store.ErrNotFound) {
		return store.SettlementRun{}, nil, &problemError{typ: wire.ProblemNotFound,
			detail: fmt.Sprintf("%s has not been settled yet: POST /api/settlements/%s/run settles it now", date, date)}
	}
	if err != nil {
		return store.SettlementRun{}, nil, err
	}
	exceptions, err := s.store.SettlementExceptions(ctx, date, store.MaxSettlementBatch)
	if err != nil {
		return store.SettlementRun{}, nil, err
	}
	return run, exceptions, nil
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
