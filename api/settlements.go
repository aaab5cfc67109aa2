package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
	b := wire.Settlement{Provider: run.Provider, Date: run.Date, Status: string(run.Status), FinishedAt: run.FinishedAt, GraceDays: run.GraceDays,
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
	return wire.ExceptionResolution{ExceptionID: r.ExceptionID, Provider: r.Provider, Date: r.Date, Note: r.Note,
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

// books reads the books a settlement route is about: the provider of its
// ?provider=, or the default one, and the report date of its path. A
// provider may be one that payments are no longer routed to, whose books
// stay readable.
func (s *server) books(r *http.Request) (provider, date string, err error) {
	if date, err = reportDate(r); err != nil {
		return "", "", err
	}
	provider = s.providers[0]
	if q := r.URL.Query(); q.Has("provider") {
		provider = q.Get("provider")
		if err := chargeonce.CheckProviderName(provider); err != nil {
			return "", "", badRequest("the query parameter provider: %v", err)
		}
	}
	return provider, date, nil
}

// booksPath is the path of a provider's settlement of date, followed by
// the route that then, such as "/run": the default provider's names none.
func (s *server) booksPath(provider, date, then string) string {
	p := "/api/settlements/" + date + then
	if provider != s.providers[0] {
		p += "?provider=" + provider
	}
	return p
}

func (s *server) getSettlement(w http.ResponseWriter, r *http.Request) {
	provider, date, err := s.books(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeSettlement(w, r, provider, date, http.StatusOK)
}

// writeSettlement answers with the recorded settlement of the provider's
// date.
func (s *server) writeSettlement(w http.ResponseWriter, r *http.Request, provider, date string, status int) {
	run, exceptions, err := s.settlementOf(r.Context(), provider, date)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resolutions, err := s.store.ExceptionResolutions(r.Context(), provider, date)
	if err != nil {
		s.fail(w, r, fmt.Errorf("settlement %s at %s: resolutions: %w", date, provider, err))
		return
	}
	writeJSON(w, s.log, status, "application/json", newSettlement(run, exceptions, resolutions))
}

// settlementOf reads the recorded settlement of the provider's date and its
// first exceptions, the ones the API shows; a date never settled is a 404.
func (s *server) settlementOf(ctx context.Context, provider, date string) (store.SettlementRun, []store.SettlementException, error) {
	run, err := s.store.SettlementRun(ctx, provider, date)
	if errors.Is(err, store.ErrNotFound) {
		return store.SettlementRun{}, nil, &problemError{typ: wire.ProblemNotFound,
			detail: fmt.Sprintf("%s has not been settled yet at provider %s: POST %s settles it now",
				date, provider, s.booksPath(provider, date, "/run"))}
	}
	if err != nil {
		return store.SettlementRun{}, nil, err
	}
	exceptions, err := s.store.SettlementExceptions(ctx, provider, date, store.MaxSettlementBatch)
	if err != nil {
		return store.SettlementRun{}, nil, err
	}
	return run, exceptions, nil
}

// runSettlement serves POST /api/settlements/{date}/run: it starts the
// SettlementWorkflow of the provider's date, or joins the one running, and
// answers with the result once it is recorded, or 202 with its Location if
// it takes longer than settlementRunWait. Only the books of a provider that
// payments are routed to can be settled: the workers read no other's
// reports.
func (s *server) runSettlement(w http.ResponseWriter, r *http.Request) {
	provider, date, err := s.books(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !slices.Contains(s.providers, provider) {
		s.fail(w, r, badRequest("the query parameter provider: payments are not routed to %q, whose reports the workers do not read (they are routed to %s)",
			provider, strings.Join(s.providers, ", ")))
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
	run, err := workflows.RunSettlement(r.Context(), s.temporal, workflows.SettlementInput{Provider: provider, Date: date})
	if err != nil {
		s.log.Error("settlement run not started", "provider", provider, "date", date, "error", err)
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "the settlement run could not be started: Temporal does not answer"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), settlementRunWait)
	defer cancel()
	err = run.Get(ctx, nil)
	switch {
	case ctx.Err() != nil:
		w.Header().Set("Location", s.booksPath(provider, date, ""))
		writeJSON(w, s.log, http.StatusAccepted, "application/json", wire.SettlementRunning{Provider: provider, Date: date, Status: "running", WorkflowID: run.GetID()})
	case err != nil:
		// The workflow's error is for operators, who find it in the log
		// and in the workflow's history; the client learns which run failed.
		s.log.Error("settlement run failed", "provider", provider, "date", date, "workflow", run.GetID(), "error", err)
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: fmt.Sprintf("the settlement run %s failed; its history in Temporal says why", run.GetID())})
	default:
		s.writeSettlement(w, r, provider, date, http.StatusOK)
	}
}
