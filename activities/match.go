package activities

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// matcher runs one settlement of a date: a merge of the staged lines and the
// day's succeeded attempts, both read in pages by charge id, so that it
// holds a few batches in memory however long the report is. The lines left
// without an attempt of the day, and the attempts left without a line, are
// looked up in batches too.
type matcher struct {
	ctx  context.Context
	st   store.SettlementStore
	in   MatchReportInput
	from time.Time
	to   time.Time
	// graceDays is the worker's grace period: see Settlement.GraceDays.
	graceDays int
	// graceOver is whether an attempt of the day that no report lists yet
	// is missing rather than awaiting.
	graceOver bool
	log       *slog.Logger

	lines    pages[store.SettlementLine]
	attempts pages[store.Attempt]
	// orphans are charge lines with no succeeded attempt of the day;
	// unreported are attempts of the day with no line in the report.
	orphans    []store.SettlementLine
	unreported []store.Attempt
	// last is the charge line consumed last, and its order when known, to
	// tell a duplicate line.
	last      string
	lastOrder int64

	run     store.SettlementRun
	totals  map[string]*store.SettlementTotal
	pending []store.SettlementException
}

func newMatcher(ctx context.Context, st store.SettlementStore, day time.Time, in MatchReportInput, graceDays int, now time.Time, log *slog.Logger) *matcher {
	m := &matcher{
		ctx: ctx, st: st, in: in, graceDays: graceDays, from: day, to: day.AddDate(0, 0, 1),
		graceOver: !now.Before(day.AddDate(0, 0, 1+graceDays)),
		log:       log.With("date", in.Date),
		run: store.SettlementRun{Date: in.Date, RunID: in.RunID, Status: store.SettlementFinal, GraceDays: graceDays,
			FinishedAt: now, ByKind: map[chargeonce.ExceptionKind]int{}},
		totals: map[string]*store.SettlementTotal{},
	}
	m.lines.next = func(last *store.SettlementLine) ([]store.SettlementLine, error) {
		var after store.LineCursor
		if last != nil {
			after = store.LineCursor{ChargeID: last.ChargeID, LineNo: last.LineNo}
		}
		return st.SettlementLines(ctx, in.Date, after, store.MaxSettlementBatch)
	}
	m.attempts.next = func(last *store.Attempt) ([]store.Attempt, error) {
		after := ""
		if last != nil {
			after = last.ProviderPaymentID
		}
		return st.SucceededAttempts(ctx, m.from, m.to, after, store.MaxSettlementBatch)
	}
	return m
}

// pages reads a sequence one page at a time.
type pages[T any] struct {
	// next returns the page after last, nil for the first.
	next func(last *T) ([]T, error)
	page []T
	i    int
	done bool
}

// peek returns the current item, nil at the end.
func (p *pages[T]) peek() (*T, error) {
	if p.i < len(p.page) {
		return &p.page[p.i], nil
	}
	if p.done {
		return nil, nil
	}
	var last *T
	if len(p.page) > 0 {
		last = &p.page[len(p.page)-1]
	}
	page, err := p.next(last)
	if err != nil {
		return nil, err
	}
	p.page, p.i, p.done = page, 0, len(page) < store.MaxSettlementBatch
	if len(page) == 0 {
		return nil, nil
	}
	return &p.page[0], nil
}

func (p *pages[T]) advance() { p.i++ }

func (m *matcher) match() (store.SettlementRun, error) {
	for {
		l, err := m.lines.peek()
		if err != nil {
			return store.SettlementRun{}, err
		}
		a, err := m.attempts.peek()
		if err != nil {
			return store.SettlementRun{}, err
		}
		switch {
		case l == nil && a == nil:
			return m.finish()
		case l != nil && (a == nil || l.ChargeID <= a.ProviderPaymentID || l.Problem != "" || l.Category != settlement.CategoryCharge):
			line := *l
			m.lines.advance()
			var match *store.Attempt
			if a != nil && line.ChargeID == a.ProviderPaymentID && line.Problem == "" && line.Category == settlement.CategoryCharge &&
				line.ChargeID != m.last {
				match = a
				m.attempts.advance()
			}
			err = m.line(line, match)
		default:
			m.unreported = append(m.unreported, *a)
			m.attempts.advance()
			if len(m.unreported) == store.MaxSettlementBatch {
				err = m.resolveUnreported()
			}
		}
		if err != nil {
			return store.SettlementRun{}, err
		}
	}
}

// line consumes one line; match is the attempt of the day with its charge.
func (m *matcher) line(l store.SettlementLine, match *store.Attempt) error {
	m.run.Lines++
	if m.run.Lines%store.MaxSettlementBatch == 0 {
		activity.RecordHeartbeat(m.ctx, m.run.Lines)
	}
	if l.Problem != "" {
		return m.add(store.SettlementException{Kind: chargeonce.ExceptionMalformedLine, LineNo: l.LineNo,
			Detail: fmt.Sprintf("Line %d of the report cannot be read (%s): ask the provider for a corrected report. The line reads: %s", l.LineNo, l.Problem, l.Raw)})
	}
	if err := m.count(l); err != nil {
		if match != nil {
			// The line cannot stand for its charge: the attempt is as
			// unreported as a malformed line leaves it.
			m.unreported = append(m.unreported, *match)
		}
		return m.add(store.SettlementException{Kind: chargeonce.ExceptionMalformedLine, LineNo: l.LineNo,
			Detail: fmt.Sprintf("Line %d of the report, charge %s of %s, cannot be counted (%v): no real day's totals hold it, so the totals leave it out; ask the provider for a corrected report.",
				l.LineNo, l.ChargeID, chargeonce.Money{Minor: l.Gross, Currency: l.Currency}, err)})
	}
	if l.Category != settlement.CategoryCharge {
		return nil
	}
	if l.ChargeID == m.last {
		return m.add(store.SettlementException{Kind: chargeonce.ExceptionDuplicateLine, ChargeID: l.ChargeID,
			MerchantReference: l.MerchantReference, OrderID: m.lastOrder, LineNo: l.LineNo,
			ReportedMinor: l.Gross, ReportedCurrency: l.Currency,
			Detail: fmt.Sprintf("The report lists charge %s again on line %d: ask the provider to correct the report; the totals count every line as reported.", l.ChargeID, l.LineNo)})
	}
	m.last, m.lastOrder = l.ChargeID, 0
	if match != nil {
		m.lastOrder = match.OrderID
		return m.compare(l, *match)
	}
	m.orphans = append(m.orphans, l)
	if len(m.orphans) == store.MaxSettlementBatch {
		return m.resolveOrphans()
	}
	return nil
}

// count adds a line to the totals of its currency, or changes nothing and
// returns an error wrapping chargeonce.ErrOverflow when a sum would not fit
// in int64: a total never wraps around.
func (m *matcher) count(l store.SettlementLine) error {
	t := m.totals[l.Currency]
	if t == nil {
		t = &store.SettlementTotal{Currency: l.Currency}
	}
	gross, errGross := chargeonce.AddMinor(t.Gross, l.Gross)
	fee, errFee := chargeonce.AddMinor(t.Fee, l.Fee)
	net, errNet := chargeonce.AddMinor(t.Net, l.Net)
	if errGross != nil || errFee != nil || errNet != nil {
		return fmt.Errorf("the day's %s totals would not fit in 64 bits: %w", l.Currency, chargeonce.ErrOverflow)
	}
	t.Lines++
	t.Gross, t.Fee, t.Net = gross, fee, net
	m.totals[l.Currency] = t
	return nil
}

// compare checks a charge line against its succeeded attempt.
func (m *matcher) compare(l store.SettlementLine, a store.Attempt) error {
	reported := chargeonce.Money{Minor: l.Gross, Currency: l.Currency}
	e := store.SettlementException{ChargeID: l.ChargeID, MerchantReference: a.MerchantReference, OrderID: a.OrderID,
		AttemptKey: a.Key, LineNo: l.LineNo, ReportedMinor: l.Gross, ReportedCurrency: l.Currency,
		ExpectedMinor: a.Amount.Minor, ExpectedCurrency: a.Amount.Currency}
	switch {
	case l.Currency != a.Amount.Currency:
		e.Kind = chargeonce.ExceptionCurrencyMismatch
		e.Detail = fmt.Sprintf("The report settles charge %s of order %d in %s, but the order was charged %s: ask the provider which currency the customer paid in.",
			l.ChargeID, a.OrderID, l.Currency, a.Amount)
	case l.Gross != a.Amount.Minor:
		e.Kind = chargeonce.ExceptionAmountMismatch
		e.Detail = fmt.Sprintf("The report settles charge %s of order %d at %s, but the order was charged %s: ask the provider to correct the report, or refund the difference.",
			l.ChargeID, a.OrderID, reported, a.Amount)
	default:
		m.run.Matched++
		return nil
	}
	return m.add(e)
}

// resolveOrphans looks the charge lines without an attempt of the day up by
// charge id, among attempts of any day and status, and then by merchant
// reference: a succeeded attempt of another day is a match; anything else
// is an unknown charge.
func (m *matcher) resolveOrphans() error {
	if len(m.orphans) == 0 {
		return nil
	}
	ids := make([]string, len(m.orphans))
	refs := make([]string, 0, len(m.orphans))
	for i, l := range m.orphans {
		ids[i] = l.ChargeID
		if l.MerchantReference != "" {
			refs = append(refs, l.MerchantReference)
		}
	}
	byCharge, err := m.st.AttemptsByCharge(m.ctx, ids)
	if err != nil {
		return err
	}
	byRef, err := m.st.AttemptsByReference(m.ctx, slices.Compact(slices.Sorted(slices.Values(refs))))
	if err != nil {
		return err
	}
	charged := index(byCharge, func(a store.Attempt) string { return a.ProviderPaymentID })
	referenced := index(byRef, func(a store.Attempt) string { return a.MerchantReference })
	for _, l := range m.orphans {
		a, found := charged[l.ChargeID]
		if found && a.Status == chargeonce.AttemptSucceeded {
			if err := m.compare(l, a); err != nil {
				return err
			}
			continue
		}
		if !found {
			a, found = referenced[l.MerchantReference]
		}
		if err := m.unknown(l, a, found); err != nil {
			return err
		}
	}
	m.orphans = m.orphans[:0]
	return nil
}

// unknown records a charge with no succeeded attempt, and raises the alert.
// a is the attempt of its charge id or merchant reference, when found.
func (m *matcher) unknown(l store.SettlementLine, a store.Attempt, found bool) error {
	charged := chargeonce.Money{Minor: l.Gross, Currency: l.Currency}
	e := store.SettlementException{Kind: chargeonce.ExceptionUnknownCharge, ChargeID: l.ChargeID,
		MerchantReference: l.MerchantReference, LineNo: l.LineNo, ReportedMinor: l.Gross, ReportedCurrency: l.Currency}
	switch {
	case !found:
		e.Detail = fmt.Sprintf("The provider charged %s as %s (reference %q), which no payment attempt made: find the customer and refund charge %s.",
			charged, l.ChargeID, l.MerchantReference, l.ChargeID)
	case a.Status == chargeonce.AttemptSucceeded:
		e.Detail = fmt.Sprintf("Order %d was charged twice: %s is a second charge for attempt %s, which succeeded with %s. Refund charge %s.",
			a.OrderID, l.ChargeID, a.Key, a.ProviderPaymentID, l.ChargeID)
	default:
		e.Detail = fmt.Sprintf("Order %d's attempt %s settled %s, yet the provider charged %s as %s: refund charge %s, or confirm it and mark the order paid.",
			a.OrderID, a.Key, a.Status, charged, l.ChargeID, l.ChargeID)
	}
	if found {
		e.OrderID, e.AttemptKey = a.OrderID, a.Key
		e.ExpectedMinor, e.ExpectedCurrency = a.Amount.Minor, a.Amount.Currency
	}
	m.log.Error("unknown charge in the settlement report: refund candidate", alert.Attr(alert.UnknownCharge),
		"charge", l.ChargeID, "reference", l.MerchantReference, "order", e.OrderID, "amount", charged.String(), "detail", e.Detail)
	return m.add(e)
}

// resolveUnreported decides the attempts of the day that the report does
// not list: one listed by a report of the grace period is fine; the others
// are missing once the grace period is over, and awaiting until then.
func (m *matcher) resolveUnreported() error {
	if len(m.unreported) == 0 {
		return nil
	}
	var later map[string]bool
	if m.graceDays > 0 {
		ids := make([]string, len(m.unreported))
		for i, a := range m.unreported {
			ids[i] = a.ProviderPaymentID
		}
		found, err := m.st.ReportedCharges(m.ctx, m.to.Format(settlement.DateLayout),
			m.from.AddDate(0, 0, m.graceDays).Format(settlement.DateLayout), ids)
		if err != nil {
			return err
		}
		later = make(map[string]bool, len(found))
		for _, id := range found {
			later[id] = true
		}
	}
	for _, a := range m.unreported {
		switch {
		case later[a.ProviderPaymentID]:
		case !m.graceOver:
			m.run.Awaiting++
			m.run.Status = store.SettlementProvisional
		default:
			err := m.add(store.SettlementException{Kind: chargeonce.ExceptionMissingInReport, ChargeID: a.ProviderPaymentID,
				MerchantReference: a.MerchantReference, OrderID: a.OrderID, AttemptKey: a.Key,
				ExpectedMinor: a.Amount.Minor, ExpectedCurrency: a.Amount.Currency,
				Detail: fmt.Sprintf("Order %d was paid %s with charge %s on %s, but no settlement report of the %d days since lists it: ask the provider whether the charge was captured.",
					a.OrderID, a.Amount, a.ProviderPaymentID, m.in.Date, m.graceDays+1)})
			if err != nil {
				return err
			}
		}
	}
	m.unreported = m.unreported[:0]
	return nil
}

// add numbers an exception and stores the pending ones a batch at a time.
func (m *matcher) add(e store.SettlementException) error {
	m.run.Exceptions++
	m.run.ByKind[e.Kind]++
	e.Seq = m.run.Exceptions
	m.pending = append(m.pending, e)
	if len(m.pending) == store.MaxSettlementBatch {
		return m.flush()
	}
	return nil
}

func (m *matcher) flush() error {
	if err := m.st.AddSettlementExceptions(m.ctx, m.in.Date, m.in.RunID, m.pending); err != nil {
		return err
	}
	m.pending = m.pending[:0]
	return nil
}

// finish resolves what is left and returns the run.
func (m *matcher) finish() (store.SettlementRun, error) {
	if err := m.resolveOrphans(); err != nil {
		return store.SettlementRun{}, err
	}
	if err := m.resolveUnreported(); err != nil {
		return store.SettlementRun{}, err
	}
	if err := m.flush(); err != nil {
		return store.SettlementRun{}, err
	}
	for _, c := range slices.Sorted(maps.Keys(m.totals)) {
		m.run.Totals = append(m.run.Totals, *m.totals[c])
	}
	return m.run, nil
}

func index(attempts []store.Attempt, key func(store.Attempt) string) map[string]store.Attempt {
	m := make(map[string]store.Attempt, len(attempts))
	for _, a := range attempts {
		m[key(a)] = a
	}
	return m
}
