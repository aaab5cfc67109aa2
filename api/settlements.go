package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"chargeonce"
	"chargeonce/provider/settlement"
	"chargeonce/store"
	"chargeonce/workflows"
)

// settlementRunWait bounds how long POST /api/settlements/{date}/run waits
// for the run before it answers 202.
const settlementRunWait = time.Minute

// settlementBody is GET /api/settlements/{date}.
type settlementBody struct {
	Date string `json:"date"`
	// Status is provisional while succeeded attempts await their report
	// line within the grace period, final otherwise.
	Status     store.SettlementStatus `json:"status"`
	FinishedAt time.Time              `json:"finishedAt"`
	GraceDays  int                    `json:"graceDays"`
	Lines      int                    `json:"lines"`
	Matched    int                    `json:"matched"`
	Awaiting   int                    `json:"awaiting"`
	Totals     []totalBody            `json:"totals"`
	// ExceptionCounts counts every exception by kind; Exceptions lists the
	// first store.MaxSettlementBatch of them.
	ExceptionCounts map[chargeonce.ExceptionKind]int `json:"exceptionCounts"`
	Exceptions      []exceptionBody                  `json:"exceptions"`
}

type totalBody struct {
	Currency string `json:"currency"`
	Lines    int    `json:"lines"`
	Gross    string `json:"gross"`
	Fee      string `json:"fee"`
	Net      string `json:"net"`
}

type amountBody struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

type exceptionBody struct {
	Kind              chargeonce.ExceptionKind `json:"kind"`
	ChargeID          string                   `json:"chargeId,omitempty"`
	MerchantReference string                   `json:"merchantReference,omitempty"`
	OrderID           int64                    `json:"orderId,omitempty"`
	IdempotencyKey    string                   `json:"idempotencyKey,omitempty"`
	// Line is the report line, absent when the report has none.
	Line int `json:"line,omitempty"`
	// Reported is what the report says, Expected what the attempt holds.
	Reported *amountBody `json:"reported,omitempty"`
	Expected *amountBody `json:"expected,omitempty"`
	// Detail is a sentence a person can act on.
	Detail string `json:"detail"`
}

func amountOf(minor int64, currency string) *amountBody {
	if currency == "" {
		return nil
	}
	return &amountBody{Amount: chargeonce.Money{Minor: minor, Currency: currency}.Decimal(), Currency: currency}
}

func newSettlementBody(run store.SettlementRun, exceptions []store.SettlementException) settlementBody {
	b := settlementBody{Date: run.Date, Status: run.Status, FinishedAt: run.FinishedAt, GraceDays: run.GraceDays,
		Lines: run.Lines, Matched: run.Matched, Awaiting: run.Awaiting, ExceptionCounts: run.ByKind,
		Totals: []totalBody{}, Exceptions: []exceptionBody{}}
	for _, t := range run.Totals {
		money := func(minor int64) string { return chargeonce.Money{Minor: minor, Currency: t.Currency}.Decimal() }
		b.Totals = append(b.Totals, totalBody{Currency: t.Currency, Lines: t.Lines, Gross: money(t.Gross), Fee: money(t.Fee), Net: money(t.Net)})
	}
	for _, e := range exceptions {
		b.Exceptions = append(b.Exceptions, exceptionBody{Kind: e.Kind, ChargeID: e.ChargeID, MerchantReference: e.MerchantReference,
			OrderID: e.OrderID, IdempotencyKey: e.AttemptKey, Line: e.LineNo,
			Reported: amountOf(e.ReportedMinor, e.ReportedCurrency), Expected: amountOf(e.ExpectedMinor, e.ExpectedCurrency), Detail: e.Detail})
	}
	return b
}

// reportDate reads the {date} of a settlement path: a UTC date that has
// begun.
func reportDate(r *http.Request) (string, error) {
	date := r.PathValue("date")
	d, err := settlement.ParseDate(date)
	if err != nil {
		return "", &badRequestError{"the settlement date " + err.Error()}
	}
	if d.After(time.Now()) {
		return "", &badRequestError{fmt.Sprintf("the settlement date %s is in the future: the provider has no report for it yet", date)}
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
		writeProblem(w, s.log, newProblem(kindNotFound, fmt.Sprintf("%s has not been settled yet: POST /api/settlements/%s/run settles it now", date, date)))
		return
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
	writeJSON(w, s.log, status, "application/json", newSettlementBody(run, exceptions))
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
	if s.temporal == nil {
		writeProblem(w, s.log, newProblem(kindUnavailable, "this API has no Temporal client to run settlements with"))
		return
	}
	run, err := workflows.RunSettlement(r.Context(), s.temporal, workflows.SettlementInput{Date: date})
	if err != nil {
		s.log.Error("settlement run not started", "date", date, "error", err)
		writeProblem(w, s.log, newProblem(kindUnavailable, "the settlement run could not be started: Temporal does not answer"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), settlementRunWait)
	defer cancel()
	err = run.Get(ctx, nil)
	switch {
	case ctx.Err() != nil:
		w.Header().Set("Location", "/api/settlements/"+date)
		writeJSON(w, s.log, http.StatusAccepted, "application/json", map[string]string{"date": date, "status": "running", "workflowId": run.GetID()})
	case err != nil:
		s.log.Error("settlement run failed", "date", date, "workflow", run.GetID(), "error", err)
		writeProblem(w, s.log, newProblem(kindUnavailable, fmt.Sprintf("the settlement run %s failed: %v", run.GetID(), err)))
	default:
		s.writeSettlement(w, r, date, http.StatusOK)
	}
}
