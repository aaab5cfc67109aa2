package activities

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// matcher runs one settlement of a date in two merges, each of two sorted
// sequences read in pages, so that it holds a few batches in memory however
// long the report is: the staged lines against the charges the books expect
// that day (store.SettlementStore.SucceededAttempts) by charge id, then the
// refund lines against the day's succeeded refunds by refund id. The lines
// left without an attempt or refund of the day, and the attempts and
// refunds left without a line, are looked up in batches too.
type matcher struct {
	ctx context.Context
	st  Books
	// provider names the provider whose report is matched; the books read
	// are its attempts and refunds.
	provider string
	now      time.Time
	in       MatchReportInput
	from     time.Time
	to       time.Time
	// graceDays is the worker's grace period: see Settlement.GraceDays.
	graceDays int
	// graceOver is whether an attempt of the day that no report lists yet
	// is missing rather than awaiting.
	graceOver bool
	log       *slog.Logger

	lines    pages[store.SettlementLine]
	attempts pages[store.ReportedAttempt]
	// orphans are charge lines with no succeeded attempt of the day;
	// unreported are attempts of the day with no line in the report.
	orphans    []store.SettlementLine
	unreported []store.ReportedAttempt
	// last is the charge line consumed last, and its order when known, to
	// tell a duplicate line.
	last      string
	lastOrder int64

	refundLines pages[store.SettlementLine]
	refunds     pages[store.Refund]
	// group gathers the lines of one refund id as they come.
	group refundGroup
	// orphanRefunds are refund ids with no succeeded refund of the day;
	// unreportedRefunds are succeeded refunds of the day that no line
	// names.
	orphanRefunds     []refundGroup
	unreportedRefunds []store.Refund

	run     store.SettlementRun
	totals  map[string]*store.SettlementTotal
	pending []store.SettlementException
}

func newMatcher(ctx context.Context, st Books, provider string, day time.Time, in MatchReportInput, graceDays int, now time.Time, log *slog.Logger) *matcher {
	m := &matcher{
		ctx: ctx, st: st, provider: provider, now: now, in: in, graceDays: graceDays, from: day, to: day.AddDate(0, 0, 1),
		graceOver: !now.Before(day.AddDate(0, 0, 1+graceDays)),
		log:       log.With("provider", provider, "date", in.Date),
		run: store.SettlementRun{Provider: provider, Date: in.Date, RunID: in.RunID, Status: store.SettlementFinal, GraceDays: graceDays,
			FinishedAt: now, ByKind: map[chargeonce.ExceptionKind]int{}},
		totals: map[string]*store.SettlementTotal{},
	}
	m.lines.next = func(last *store.SettlementLine) ([]store.SettlementLine, error) {
		var after store.LineCursor
		if last != nil {
			after = store.LineCursor{ChargeID: last.ChargeID, LineNo: last.LineNo}
		}
		return st.SettlementLines(ctx, provider, in.Date, after, store.MaxSettlementBatch)
	}
	m.attempts.next = func(last *store.ReportedAttempt) ([]store.ReportedAttempt, error) {
		after := ""
		if last != nil {
			after = last.ProviderPaymentID
		}
		return st.SucceededAttempts(ctx, provider, m.from, m.to, after, store.MaxSettlementBatch)
	}
	m.refundLines.next = func(last *store.SettlementLine) ([]store.SettlementLine, error) {
		var after store.LineCursor
		if last != nil {
			after = store.LineCursor{RefundID: last.RefundID, LineNo: last.LineNo}
		}
		return st.RefundLines(ctx, provider, in.Date, after, store.MaxSettlementBatch)
	}
	m.refunds.next = func(last *store.Refund) ([]store.Refund, error) {
		after := ""
		if last != nil {
			after = last.ProviderRefundID
		}
		return st.SucceededRefunds(ctx, provider, m.from, m.to, after, store.MaxSettlementBatch)
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
			if err := m.matchRefunds(); err != nil {
				return store.SettlementRun{}, err
			}
			return m.finish()
		case l != nil && (a == nil || l.ChargeID <= a.ProviderPaymentID || l.Problem != "" || l.Category != settlement.CategoryCharge):
			line := *l
			m.lines.advance()
			var match *store.ReportedAttempt
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
func (m *matcher) line(l store.SettlementLine, match *store.ReportedAttempt) error {
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
		return m.expected(l, *match)
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

// compare checks a charge line against the charge of order that the books
// expect: the charge its succeeded attempt expects (for a hold, what was
// captured), or the amount of its adopted late charge; key is that
// attempt's.
func (m *matcher) compare(l store.SettlementLine, order int64, key string, expected chargeonce.Money) error {
	reported := chargeonce.Money{Minor: l.Gross, Currency: l.Currency}
	e := store.SettlementException{ChargeID: l.ChargeID, MerchantReference: l.MerchantReference, OrderID: order,
		AttemptKey: key, LineNo: l.LineNo, ReportedMinor: l.Gross, ReportedCurrency: l.Currency,
		ExpectedMinor: expected.Minor, ExpectedCurrency: expected.Currency}
	switch {
	case l.Currency != expected.Currency:
		e.Kind = chargeonce.ExceptionCurrencyMismatch
		e.Detail = fmt.Sprintf("The report settles charge %s of order %d in %s, but the order was charged %s: ask the provider which currency the customer paid in.",
			l.ChargeID, order, l.Currency, expected)
	case l.Gross != expected.Minor:
		e.Kind = chargeonce.ExceptionAmountMismatch
		e.Detail = fmt.Sprintf("The report settles charge %s of order %d at %s, but the order was charged %s: ask the provider to correct the report, or refund the difference.",
			l.ChargeID, order, reported, expected)
	default:
		m.run.Matched++
		return nil
	}
	return m.add(e)
}

// expected checks a charge line against its succeeded attempt a: against
// the charge the attempt expects, unless it is a hold that took no money.
func (m *matcher) expected(l store.SettlementLine, a store.ReportedAttempt) error {
	if a.Uncaptured() {
		return m.uncaptured(l, a)
	}
	return m.compare(l, a.OrderID, a.Key, a.Expected)
}

// uncaptured records a charge line for a hold that we hold as authorized,
// voided or expired: the provider took money that no capture of ours took.
func (m *matcher) uncaptured(l store.SettlementLine, a store.ReportedAttempt) error {
	charged := chargeonce.Money{Minor: l.Gross, Currency: l.Currency}
	e := store.SettlementException{Kind: chargeonce.ExceptionUncapturedCharge, ChargeID: l.ChargeID,
		MerchantReference: l.MerchantReference, OrderID: a.OrderID, AttemptKey: a.Key, LineNo: l.LineNo,
		ReportedMinor: l.Gross, ReportedCurrency: l.Currency, ExpectedCurrency: a.Amount.Currency}
	if a.Hold == chargeonce.HoldAuthorized {
		e.Detail = fmt.Sprintf("The report settles %s of hold %s of order %d, which we hold as authorized still: if a capture of it is pending, settle the day again once it has settled; otherwise ask the provider who captured it.",
			charged, l.ChargeID, a.OrderID)
	} else {
		e.Detail = fmt.Sprintf("The report settles %s of hold %s of order %d, which we hold as %s: no capture of ours took that money; ask the provider, and refund the customer what was taken (POST /api/charges/%s/refunds).",
			charged, l.ChargeID, a.OrderID, a.Hold, l.ChargeID)
	}
	m.log.Error("uncaptured hold charged in the settlement report", "charge", l.ChargeID, "reference", l.MerchantReference,
		"order", a.OrderID, "hold", string(a.Hold), "amount", charged.String())
	return m.add(e)
}

// resolveOrphans looks the charge lines without an attempt of the day up by
// charge id, among attempts of any day and status and among the late
// charges, and then by merchant reference: a succeeded attempt of another
// day, or a late charge its order adopted, is a match; a charge for an
// attempt that did not succeed with it is repaired (repair); anything else
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
	byCharge, err := m.st.AttemptsByCharge(m.ctx, m.provider, ids)
	if err != nil {
		return err
	}
	byRef, err := m.st.AttemptsByReference(m.ctx, m.provider, slices.Compact(slices.Sorted(slices.Values(refs))))
	if err != nil {
		return err
	}
	late, err := m.st.LateCharges(m.ctx, ids)
	if err != nil {
		return err
	}
	charged := index(byCharge, func(a store.ReportedAttempt) string { return a.ProviderPaymentID })
	referenced := index(byRef, func(a store.ReportedAttempt) string { return a.MerchantReference })
	repaired := index(late, func(c store.RecordedLateCharge) string { return c.ChargeID })
	for _, l := range m.orphans {
		a, found := charged[l.ChargeID]
		if found && a.Status == chargeonce.AttemptSucceeded {
			if err := m.expected(l, a); err != nil {
				return err
			}
			continue
		}
		if c, ok := repaired[l.ChargeID]; ok && c.Decision == chargeonce.LateChargeAdopted {
			if err := m.compare(l, c.OrderID, c.AttemptKey, c.Amount); err != nil {
				return err
			}
			continue
		}
		if !found {
			a, found = referenced[l.MerchantReference]
		}
		if found && a.Status != chargeonce.AttemptOpen {
			if err := m.repair(l, a.Attempt, repaired[l.ChargeID]); err != nil {
				return err
			}
			continue
		}
		if err := m.unknown(l, a.Attempt, found); err != nil {
			return err
		}
	}
	m.orphans = m.orphans[:0]
	return nil
}

// repair hands a charge of attempt a, which did not succeed with it (it
// settled declined, abandoned, not_processed or failed, or succeeded with
// another charge), to RecordLateCharge: the order adopts it if nothing else
// paid it, and it is refunded in whole otherwise. recorded is what an
// earlier run or path decided, if anything. The run records what was done
// as a repair.
func (m *matcher) repair(l store.SettlementLine, a store.Attempt, recorded store.RecordedLateCharge) error {
	charged, err := chargeonce.NewMoney(l.Gross, l.Currency)
	if err != nil || charged.Minor <= 0 {
		// Nothing that is not a charge can be adopted or refunded.
		return m.unknown(l, a, true)
	}
	e := store.SettlementException{ChargeID: l.ChargeID, MerchantReference: l.MerchantReference, OrderID: a.OrderID,
		AttemptKey: a.Key, LineNo: l.LineNo, ReportedMinor: l.Gross, ReportedCurrency: l.Currency,
		ExpectedMinor: a.Amount.Minor, ExpectedCurrency: a.Amount.Currency}
	why := fmt.Sprintf("attempt %s settled %s", a.Key, a.Status)
	if a.Status == chargeonce.AttemptSucceeded {
		why = fmt.Sprintf("attempt %s succeeded with charge %s", a.Key, a.ProviderPaymentID)
	}
	decision, refundKey := recorded.Decision, recorded.RefundKey
	if decision == "" {
		key, err := uuid.NewV7()
		if err != nil {
			return err
		}
		prefix, _, _, err := chargeonce.ParseMerchantReference(a.MerchantReference)
		if err != nil {
			return fmt.Errorf("settlement: attempt %s: %w", a.Key, err)
		}
		var refund *store.Refund
		decision, refund, err = m.st.RecordLateCharge(m.ctx, store.LateCharge{AttemptKey: a.Key, ChargeID: l.ChargeID,
			Amount: charged, RefundKey: key.String(), ReferencePrefix: prefix, Now: m.now})
		if err != nil {
			return err
		}
		if refund != nil {
			refundKey = refund.Key
		}
	}
	switch decision {
	case chargeonce.LateChargeAdopted:
		e.Kind = chargeonce.ExceptionLateChargeAdopted
		e.Detail = fmt.Sprintf("Order %d now is paid by charge %s of %s, although %s: nothing else paid the order, so the customer's money pays it; deliver the order.",
			a.OrderID, l.ChargeID, charged, why)
	case chargeonce.LateChargeRefunded:
		e.Kind, e.RefundKey = chargeonce.ExceptionLateChargeRefunded, refundKey
		e.Detail = fmt.Sprintf("Order %d was paid by another charge, so charge %s of %s, for which %s, is refunded in whole under refund %s; the refund sweep sends it if nothing did yet. Act only if that refund fails.",
			a.OrderID, l.ChargeID, charged, why, refundKey)
		m.log.Error("late charge in the settlement report: refunded", alert.Attr(alert.LateChargeRefunded),
			"charge", l.ChargeID, "reference", l.MerchantReference, "order", a.OrderID, "amount", charged.String(), "refund", refundKey)
	default:
		// The charge paid the order after all, since the attempt was read.
		return m.compare(l, a.OrderID, a.Key, charged)
	}
	return m.add(e)
}

// unknown records a charge that no order can take, and raises the alert. a
// is the attempt of its charge id or merchant reference, when found.
func (m *matcher) unknown(l store.SettlementLine, a store.Attempt, found bool) error {
	charged := chargeonce.Money{Minor: l.Gross, Currency: l.Currency}
	e := store.SettlementException{Kind: chargeonce.ExceptionUnknownCharge, ChargeID: l.ChargeID,
		MerchantReference: l.MerchantReference, LineNo: l.LineNo, ReportedMinor: l.Gross, ReportedCurrency: l.Currency}
	switch {
	case !found:
		e.Detail = fmt.Sprintf("The provider charged %s as %s (reference %q), which no payment attempt made: find the customer and refund charge %s (POST /api/charges/%s/refunds).",
			charged, l.ChargeID, l.MerchantReference, l.ChargeID, l.ChargeID)
	case a.Status == chargeonce.AttemptOpen:
		e.Detail = fmt.Sprintf("Order %d's attempt %s is still open, yet the provider charged %s as %s: its reconciliation settles it; settle the day again once it has.",
			a.OrderID, a.Key, charged, l.ChargeID)
	default:
		e.Detail = fmt.Sprintf("Order %d's attempt %s settled %s, and the provider lists %s as %s, which is not a charge that can be repaired: ask the provider to correct the report.",
			a.OrderID, a.Key, a.Status, charged, l.ChargeID)
	}
	if found {
		e.OrderID, e.AttemptKey = a.OrderID, a.Key
		e.ExpectedMinor, e.ExpectedCurrency = a.Amount.Minor, a.Amount.Currency
	}
	m.log.Error("unknown charge in the settlement report", alert.Attr(alert.UnknownCharge),
		"charge", l.ChargeID, "reference", l.MerchantReference, "order", e.OrderID, "amount", charged.String(), "detail", e.Detail)
	return m.add(e)
}

// resolveUnreported decides the attempts of the day that the report does
// not list: one listed by a report of the grace period is fine, and so is
// a captured hold listed by the report of the day before; the others
// are missing once the grace period is over, and awaiting until then.
func (m *matcher) resolveUnreported() error {
	if len(m.unreported) == 0 {
		return nil
	}
	ids := make([]string, len(m.unreported))
	for i, a := range m.unreported {
		ids[i] = a.ProviderPaymentID
	}
	later, err := m.reportedLater(ids, m.st.ReportedCharges)
	if err != nil {
		return err
	}
	before, err := m.capturedTheDayBefore()
	if err != nil {
		return err
	}
	for _, a := range m.unreported {
		switch {
		case later[a.ProviderPaymentID] || before[a.ProviderPaymentID]:
		case !m.graceOver:
			m.run.Awaiting++
			m.run.Status = store.SettlementProvisional
		default:
			err := m.add(store.SettlementException{Kind: chargeonce.ExceptionMissingInReport, ChargeID: a.ProviderPaymentID,
				MerchantReference: a.MerchantReference, OrderID: a.OrderID, AttemptKey: a.Key,
				ExpectedMinor: a.Expected.Minor, ExpectedCurrency: a.Expected.Currency,
				Detail: fmt.Sprintf("Order %d was paid %s with charge %s on %s, but no settlement report of the %s since lists it: ask the provider whether the charge was captured.",
					a.OrderID, a.Expected, a.ProviderPaymentID, m.in.Date, chargeonce.Plural(m.graceDays+1, "day"))})
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
	if err := m.st.AddSettlementExceptions(m.ctx, m.provider, m.in.Date, m.in.RunID, m.pending); err != nil {
		return err
	}
	m.pending = m.pending[:0]
	return nil
}

// finish resolves what is left and returns the run.
func (m *matcher) finish() (store.SettlementRun, error) {
	for _, resolve := range []func() error{m.resolveOrphans, m.resolveUnreported, m.resolveOrphanRefunds, m.resolveUnreportedRefunds} {
		if err := resolve(); err != nil {
			return store.SettlementRun{}, err
		}
	}
	if err := m.flush(); err != nil {
		return store.SettlementRun{}, err
	}
	for _, c := range slices.Sorted(maps.Keys(m.totals)) {
		m.run.Totals = append(m.run.Totals, *m.totals[c])
	}
	return m.run, nil
}

func index[T any](items []T, key func(T) string) map[string]T {
	m := make(map[string]T, len(items))
	for _, it := range items {
		m[key(it)] = it
	}
	return m
}

// refundGroup is the lines of one refund id in the report of the date: its
// refund line, and the reversal of a refund that failed after it
// succeeded, if the provider reports one (any other category that names
// the refund, with a positive amount).
type refundGroup struct {
	id    string
	lines []store.SettlementLine
	// match is the succeeded refund of the day with this id, if any.
	match *store.Refund
}

// net is what the group returns to customers, negative, in the currency of
// its first line; ok is false when its lines are in more than one currency.
func (g refundGroup) net() (net chargeonce.Money, ok bool) {
	net.Currency = g.lines[0].Currency
	for _, l := range g.lines {
		if l.Currency != net.Currency {
			return chargeonce.Money{}, false
		}
		net.Minor += l.Gross
	}
	return net, true
}

// matchRefunds merges the refund lines, grouped by refund id, with the
// succeeded refunds of the day.
func (m *matcher) matchRefunds() error {
	for {
		l, err := m.refundLines.peek()
		if err != nil {
			return err
		}
		r, err := m.refunds.peek()
		if err != nil {
			return err
		}
		switch {
		case l == nil && r == nil:
			return m.endGroup()
		case l != nil && (r == nil || l.RefundID <= r.ProviderRefundID):
			if l.RefundID != m.group.id {
				if err := m.endGroup(); err != nil {
					return err
				}
				m.group = refundGroup{id: l.RefundID}
				if r != nil && r.ProviderRefundID == l.RefundID {
					match := *r
					m.group.match = &match
					m.refunds.advance()
				}
			}
			m.group.lines = append(m.group.lines, *l)
			m.refundLines.advance()
		default:
			m.unreportedRefunds = append(m.unreportedRefunds, *r)
			m.refunds.advance()
			if len(m.unreportedRefunds) == store.MaxSettlementBatch {
				if err := m.resolveUnreportedRefunds(); err != nil {
					return err
				}
			}
		}
	}
}

// endGroup decides the group gathered last: its duplicate lines first, and
// then the group against its refund, looked up in a batch when it has none
// of the day.
func (m *matcher) endGroup() error {
	g := m.group
	m.group = refundGroup{}
	if g.id == "" {
		return nil
	}
	// One line per category stands for the refund; the totals count every
	// line as reported.
	kept := g.lines[:0:0]
	seen := map[string]bool{}
	for _, l := range g.lines {
		if seen[l.Category] {
			err := m.add(store.SettlementException{Kind: chargeonce.ExceptionDuplicateLine, ChargeID: l.ChargeID,
				MerchantReference: l.MerchantReference, RefundID: l.RefundID, LineNo: l.LineNo,
				ReportedMinor: l.Gross, ReportedCurrency: l.Currency,
				Detail: fmt.Sprintf("The report lists the %s of refund %s again on line %d: ask the provider to correct the report; the totals count every line as reported.", l.Category, l.RefundID, l.LineNo)})
			if err != nil {
				return err
			}
			continue
		}
		seen[l.Category] = true
		kept = append(kept, l)
	}
	g.lines = kept
	if g.match != nil {
		return m.compareRefund(g, *g.match, nil)
	}
	m.orphanRefunds = append(m.orphanRefunds, g)
	if len(m.orphanRefunds) == store.MaxSettlementBatch {
		return m.resolveOrphanRefunds()
	}
	return nil
}

// resolveOrphanRefunds looks the refund ids without a succeeded refund of
// the day up, by refund id and then by merchant reference, among refunds
// of any day and status.
func (m *matcher) resolveOrphanRefunds() error {
	if len(m.orphanRefunds) == 0 {
		return nil
	}
	ids := make([]string, len(m.orphanRefunds))
	var refs []string
	for i, g := range m.orphanRefunds {
		ids[i] = g.id
		if ref := g.lines[0].MerchantReference; ref != "" {
			refs = append(refs, ref)
		}
	}
	byID, err := m.st.RefundsByProviderID(m.ctx, m.provider, ids)
	if err != nil {
		return err
	}
	byRef, err := m.st.RefundsByReference(m.ctx, m.provider, slices.Compact(slices.Sorted(slices.Values(refs))))
	if err != nil {
		return err
	}
	// A failed refund whose refund line is in this report may have its
	// reversal in a report of the grace period.
	var failed []string
	for _, r := range byID {
		if r.Status == chargeonce.RefundFailed {
			failed = append(failed, r.ProviderRefundID)
		}
	}
	reversedLater, err := m.reportedLater(failed, m.st.ReportedRefunds)
	if err != nil {
		return err
	}
	identified := index(byID, func(r store.Refund) string { return r.ProviderRefundID })
	referenced := index(byRef, func(r store.Refund) string { return r.MerchantReference })
	for _, g := range m.orphanRefunds {
		r, found := identified[g.id]
		if !found {
			r, found = referenced[g.lines[0].MerchantReference]
		}
		if !found {
			if err := m.unknownRefund(g, "which no refund of ours made: ask the provider who refunded it, and whether the customer was owed it"); err != nil {
				return err
			}
			continue
		}
		if err := m.compareRefund(g, r, reversedLater); err != nil {
			return err
		}
	}
	m.orphanRefunds = m.orphanRefunds[:0]
	return nil
}

// compareRefund checks the lines of a refund id against our refund r: a
// succeeded refund returns its amount; a failed one returned nothing, so
// its refund line, if reported, is reversed in this report or, per
// reversedLater, a later one of the grace period.
func (m *matcher) compareRefund(g refundGroup, r store.Refund, reversedLater map[string]bool) error {
	net, sameCurrency := g.net()
	first := g.lines[0]
	e := store.SettlementException{Kind: chargeonce.ExceptionRefundAmountMismatch, ChargeID: r.ChargeID,
		MerchantReference: r.MerchantReference, OrderID: r.OrderID, RefundID: g.id, RefundKey: r.Key, LineNo: first.LineNo,
		ReportedMinor: net.Minor, ReportedCurrency: net.Currency, ExpectedMinor: -r.Amount.Minor, ExpectedCurrency: r.Amount.Currency}
	switch r.Status {
	case chargeonce.RefundSucceeded:
		switch {
		case sameCurrency && net == chargeonce.Money{Minor: -r.Amount.Minor, Currency: r.Amount.Currency}:
			m.run.Matched++
			return nil
		case sameCurrency && net.Minor == 0 && len(g.lines) > 1:
			e.Detail = fmt.Sprintf("The provider reversed refund %s (key %s) of charge %s, yet we hold it as succeeded: the customer did not get %s back; confirm with the provider and refund again.",
				g.id, r.Key, r.ChargeID, r.Amount)
		default:
			e.Detail = fmt.Sprintf("The report returns %s for refund %s (key %s) of charge %s, but the refund was of %s: ask the provider to correct the report, or settle the difference with the customer.",
				returned(net, sameCurrency), g.id, r.Key, r.ChargeID, r.Amount)
		}
	case chargeonce.RefundFailed:
		switch {
		case sameCurrency && (net.Minor == 0 || net.Minor == r.Amount.Minor):
			// Reversed here, or the reversal of a refund line of an
			// earlier report.
			m.run.Matched++
			return nil
		case sameCurrency && net.Minor == -r.Amount.Minor && reversedLater[g.id]:
			m.run.Matched++
			return nil
		case sameCurrency && net.Minor == -r.Amount.Minor && !m.graceOver:
			m.run.Awaiting++
			m.run.Status = store.SettlementProvisional
			return nil
		default:
			e.ExpectedMinor = 0
			e.Detail = fmt.Sprintf("The report returns %s for refund %s (key %s) of charge %s, but we hold it as failed (%s): ask the provider whether the money went back.",
				returned(net, sameCurrency), g.id, r.Key, r.ChargeID, dash(r.FailureReason))
		}
	case chargeonce.RefundPending:
		return m.unknownRefund(g, fmt.Sprintf("which our refund %s (key %s) holds as pending still: its workflow settles it by a lookup; settle the day again once it has", r.MerchantReference, r.Key))
	default:
		return m.unknownRefund(g, fmt.Sprintf("although our refund %s (key %s) is %s, which sent nothing: ask the provider who refunded it", r.MerchantReference, r.Key, r.Status))
	}
	return m.add(e)
}

// returned says what a group's lines return.
func returned(net chargeonce.Money, sameCurrency bool) string {
	if !sameCurrency {
		return "amounts in more than one currency"
	}
	return chargeonce.Money{Minor: -net.Minor, Currency: net.Currency}.String()
}

func dash(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// unknownRefund records a refund line that no succeeded or failed refund
// of ours accounts for; why ends the sentence.
func (m *matcher) unknownRefund(g refundGroup, why string) error {
	l := g.lines[0]
	net, sameCurrency := g.net()
	m.log.Error("unknown refund in the settlement report", "refund", g.id, "charge", l.ChargeID, "reference", l.MerchantReference)
	return m.add(store.SettlementException{Kind: chargeonce.ExceptionUnknownRefund, ChargeID: l.ChargeID,
		MerchantReference: l.MerchantReference, RefundID: g.id, LineNo: l.LineNo,
		ReportedMinor: net.Minor, ReportedCurrency: net.Currency,
		Detail: fmt.Sprintf("The provider returned %s of charge %s as refund %s (reference %q), %s.", returned(net, sameCurrency), l.ChargeID, g.id, l.MerchantReference, why)})
}

// resolveUnreportedRefunds decides the succeeded refunds of the day that
// the report does not list, as resolveUnreported decides attempts.
func (m *matcher) resolveUnreportedRefunds() error {
	ids := make([]string, len(m.unreportedRefunds))
	for i, r := range m.unreportedRefunds {
		ids[i] = r.ProviderRefundID
	}
	later, err := m.reportedLater(ids, m.st.ReportedRefunds)
	if err != nil {
		return err
	}
	for _, r := range m.unreportedRefunds {
		switch {
		case later[r.ProviderRefundID]:
		case !m.graceOver:
			m.run.Awaiting++
			m.run.Status = store.SettlementProvisional
		default:
			err := m.add(store.SettlementException{Kind: chargeonce.ExceptionRefundMissingInReport, ChargeID: r.ChargeID,
				MerchantReference: r.MerchantReference, OrderID: r.OrderID, RefundID: r.ProviderRefundID, RefundKey: r.Key,
				ExpectedMinor: -r.Amount.Minor, ExpectedCurrency: r.Amount.Currency,
				Detail: fmt.Sprintf("Refund %s (key %s) returned %s of charge %s on %s, but no settlement report of the %s since lists it: ask the provider whether the money went back to the customer.",
					r.ProviderRefundID, r.Key, r.Amount, r.ChargeID, m.in.Date, chargeonce.Plural(m.graceDays+1, "day"))})
			if err != nil {
				return err
			}
		}
	}
	m.unreportedRefunds = m.unreportedRefunds[:0]
	return nil
}

// reportedLater returns which of ids the reports of the grace period after
// the date list, by the store's reported (ReportedCharges or
// ReportedRefunds); none when there is no grace period.
func (m *matcher) reportedLater(ids []string, reported func(ctx context.Context, provider, from, to string, ids []string) ([]string, error)) (map[string]bool, error) {
	if m.graceDays == 0 || len(ids) == 0 {
		return nil, nil
	}
	found, err := reported(m.ctx, m.provider, m.to.Format(settlement.DateLayout), m.from.AddDate(0, 0, m.graceDays).Format(settlement.DateLayout), ids)
	if err != nil {
		return nil, err
	}
	return set(found), nil
}

// capturedTheDayBefore returns which of the unreported attempts' captured
// holds the report of the day before the date lists: the provider captures
// before we record the capture that ends the hold, so a capture made just
// before midnight may be reported the day before its hold ended.
func (m *matcher) capturedTheDayBefore() (map[string]bool, error) {
	var ids []string
	for _, a := range m.unreported {
		if a.Hold == chargeonce.HoldCaptured {
			ids = append(ids, a.ProviderPaymentID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	dayBefore := m.from.AddDate(0, 0, -1).Format(settlement.DateLayout)
	found, err := m.st.ReportedCharges(m.ctx, m.provider, dayBefore, dayBefore, ids)
	if err != nil {
		return nil, err
	}
	return set(found), nil
}

// set holds each of ids.
func set(ids []string) map[string]bool {
	s := make(map[string]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}
