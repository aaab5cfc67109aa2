// Package invariant checks the promises of chargeonce against what the
// providers, the merchant database and Temporal hold after a run: one net
// charge per order across every provider once late charges are repaired,
// charges and succeeded attempts one to one, one key per attempt, no
// attempt left open, amounts that agree, workflows that neither failed nor
// diverged from their history, no charge for an attempt that processed
// nothing, a settlement of the day without exceptions, no charge refunded
// beyond its amount,
// refunds and refund intents one to one, and the holds of manual captures:
// captured within what they authorized, refunded within what they
// captured, never moved after they ended, ended exactly once, and never
// left authorized past their deadline.
//
// The checker reads; it never changes anything. It is what the end-to-end
// tests, the fault-injection runs and the benchmark end with, so a run
// passes only when Check reports no violation.
package invariant

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Invariant numbers a promise as docs/design.md numbers it. The first five
// are about charges; the sixth covers the workflows that carry them out; the
// seventh holds the customer's answer to "nothing was charged"; the eighth
// holds the provider's books to the merchant's; the ninth and tenth are
// about refunds; the eleventh to fifteenth about holds.
type Invariant int

// The invariants.
const (
	// NoDoubleCharge: no order keeps more than one net charge at the
	// provider (a successful charge less its succeeded refunds) beyond the
	// repair's deadline: a late or second charge is refunded in whole by
	// Config.RepairWindow after it was found, or after it was made when
	// nothing has found it.
	NoDoubleCharge Invariant = 1
	// ChargesMatchAttempts: every successful charge belongs to exactly one
	// attempt marked succeeded, or is a late charge that the repair adopted
	// or refunds; every succeeded attempt has exactly one successful
	// charge, the one it records; every paid order is paid by one of them.
	ChargesMatchAttempts Invariant = 2
	// OneKeyPerAttempt: every request for an attempt carries that attempt's
	// key, each key belongs to one attempt, and one key is sent with one body.
	OneKeyPerAttempt Invariant = 3
	// NoOverdueAttempt: no attempt is open after its abandon deadline plus
	// one reconciliation interval.
	NoOverdueAttempt Invariant = 4
	// AmountsAgree: amount and currency agree across order, attempt and
	// provider charge.
	AmountsAgree Invariant = 5
	// WorkflowsHealthy: no payment workflow failed, was terminated, was
	// cancelled or timed out, and none hit a nondeterminism error.
	WorkflowsHealthy Invariant = 6
	// NothingChargedWhenNotProcessed: an attempt settled not_processed has
	// no charge at the provider, succeeded or failed, under its key or its
	// merchant reference.
	NothingChargedWhenNotProcessed Invariant = 7
)

// String is the invariant's short name.
func (i Invariant) String() string {
	switch i {
	case NoDoubleCharge:
		return "no double charge"
	case ChargesMatchAttempts:
		return "charges match attempts"
	case OneKeyPerAttempt:
		return "one key per attempt"
	case NoOverdueAttempt:
		return "no overdue attempt"
	case AmountsAgree:
		return "amounts agree"
	case WorkflowsHealthy:
		return "workflows healthy"
	case NothingChargedWhenNotProcessed:
		return "nothing charged when not processed"
	case BooksBalance:
		return "books balance"
	case NoOverRefund:
		return "no charge refunded beyond its amount"
	case RefundsMatchIntents:
		return "refunds match refund intents"
	case CaptureWithinHold:
		return "captured within the hold"
	case RefundsWithinCapture:
		return "refunds within the capture"
	case NoMoveAfterEnd:
		return "no move after a hold ended"
	case HoldEndsOnce:
		return "every hold ends once"
	case NoOverdueHold:
		return "no hold past its deadline"
	}
	return "invariant " + strconv.Itoa(int(i))
}

// Violation is one broken promise.
type Violation struct {
	Invariant Invariant
	// Order, Key and ChargeID name what broke it, where known.
	Order    int64
	Key      string
	ChargeID string
	// Message says what is wrong, for a human.
	Message string
}

// Report is the result of one Check.
type Report struct {
	// Violations are ordered by invariant, then order, key and charge.
	Violations []Violation
	// What was looked at, so that a report of no violations can be told
	// apart from a report of nothing checked. Workflows counts workflow
	// IDs, each read at its current run.
	Orders, Attempts, Charges, ChargeRequests, Workflows, Histories int
	// HistoriesSkipped counts workflows beyond Config.HistoryLimit whose
	// history was not read.
	HistoriesSkipped int
	// Settlements counts the settlement runs read (Config.SettlementDates).
	Settlements int
	// Refunds and RefundRequests count what the provider holds; ours counts
	// our refund intents by status, and LateCharges the repairs by
	// decision.
	Refunds, RefundRequests int
	RefundsByStatus         map[chargeonce.RefundStatus]int
	LateCharges             map[chargeonce.LateChargeDecision]int
	// Holds counts our holds by status, Moves their captures and voids by
	// kind and status, such as "capture succeeded".
	Holds map[chargeonce.HoldStatus]int
	Moves map[string]int
}

// OK reports whether no invariant is broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Of returns the violations of one invariant.
func (r Report) Of(i Invariant) []Violation {
	var out []Violation
	for _, v := range r.Violations {
		if v.Invariant == i {
			out = append(out, v)
		}
	}
	return out
}

// String renders the report as a table: what was checked, then one row per
// violation.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "checked %d orders, %d attempts, %d charges, %d charge requests, %d refunds (ours: %s), %d refund requests, late charges %s, holds %s (moves: %s), %d workflows (%d histories read, %d skipped): %d violations\n",
		r.Orders, r.Attempts, r.Charges, r.ChargeRequests, r.Refunds, counts(r.RefundsByStatus), r.RefundRequests, counts(r.LateCharges),
		counts(r.Holds), counts(r.Moves),
		r.Workflows, r.Histories, r.HistoriesSkipped, len(r.Violations))
	if r.OK() {
		return b.String()
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INVARIANT\tORDER\tKEY\tCHARGE\tMESSAGE")
	for _, v := range r.Violations {
		order := "-"
		if v.Order != 0 {
			order = strconv.FormatInt(v.Order, 10)
		}
		fmt.Fprintf(tw, "%d %s\t%s\t%s\t%s\t%s\n", v.Invariant, v.Invariant, order, dash(v.Key), dash(v.ChargeID), v.Message)
	}
	_ = tw.Flush()
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// DefaultHistoryLimit is how many workflow histories Check reads when
// Config.HistoryLimit is zero.
const DefaultHistoryLimit = 1000

// Config says where Check looks.
type Config struct {
	// Store is the merchant database. Required.
	Store store.Store
	// Provider reads the charges, refunds and requests of the default
	// provider (chargeonce.DefaultProvider). Required.
	Provider ProviderSource
	// Others read the other providers that payments are routed to, by
	// name. Check holds every order to one net charge across all of them,
	// and every charge, refund and key to the provider its attempt or
	// refund was sent to.
	Others map[string]ProviderSource
	// Temporal reads the payment workflows. Required.
	Temporal client.Client
	// Interval is the reconciliation interval: an attempt may stay open this
	// long past its abandon deadline. Required.
	Interval time.Duration
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// HistoryLimit bounds how many workflow histories are read for
	// nondeterminism errors, open workflows first; zero means
	// DefaultHistoryLimit.
	HistoryLimit int
	// VisibilityWait bounds how long Check waits for Temporal's visibility
	// to list every payment workflow it read by ID before it trusts the
	// list to show the workflows no attempt leads to; zero means
	// DefaultVisibilityWait.
	VisibilityWait time.Duration
	// SettlementDates are the report dates whose recorded settlement is
	// checked, at the default provider and at each of Others (invariant
	// 8); Check reads them and runs none. Empty checks none.
	SettlementDates []string
	// RepairWindow is how long a late or second charge may stay unrefunded
	// (invariant 1): RepairDeadline of the run's timing. Zero gives none.
	RepairWindow time.Duration
	// HoldMargin is the workers' hold margin, how long before the
	// provider's expiry a hold's deadline comes (invariant 15); zero
	// means the default the workers take, DefaultTiming's.
	HoldMargin time.Duration
}

// RepairDeadline is how long after a late or second charge is found its
// refund may take to succeed: the refund sweep may take one sweepInterval
// to start its workflow, which sends the refund at once; abandonAfter
// covers its send phase and the lookups that send again a request the
// provider lost (its send window, which the key's retention bounds, is
// longer), and one more reconciliation interval the lookup that learns the
// outcome. A charge that nothing has found yet gets the
// same time from its creation; the run's settlement finds it at the
// latest.
func RepairDeadline(abandonAfter, interval, sweepInterval time.Duration) time.Duration {
	return sweepInterval + abandonAfter + interval
}

// Check verifies every invariant over the given orders, over every order
// the provider's charges name, and over every payment workflow in Temporal:
// each attempt's workflow read by its ID, and those visibility lists
// besides. It returns an error only when it cannot read, or when visibility
// does not catch up within Config.VisibilityWait; broken invariants are in
// the Report.
func Check(ctx context.Context, cfg Config, orderIDs []int64) (Report, error) {
	if cfg.Store == nil || cfg.Provider == nil || cfg.Temporal == nil {
		return Report{}, errors.New("invariant: store, provider and Temporal client are required")
	}
	if cfg.Interval <= 0 {
		return Report{}, fmt.Errorf("invariant: reconciliation interval %v is not positive", cfg.Interval)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HistoryLimit <= 0 {
		cfg.HistoryLimit = DefaultHistoryLimit
	}
	if cfg.VisibilityWait <= 0 {
		cfg.VisibilityWait = DefaultVisibilityWait
	}
	if cfg.HoldMargin <= 0 {
		cfg.HoldMargin = workflows.DefaultTiming().HoldMargin
	}
	ps, at, err := readProviders(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	now := cfg.Now()
	w, err := load(ctx, cfg.Store, orderIDs, ps, at)
	if err != nil {
		return Report{}, err
	}
	// The system may still be moving: an attempt read as succeeded may have
	// settled after the first look at the provider. Charges never vanish,
	// so a second look, taken after the store was read, holds every charge
	// a succeeded attempt can point to.
	later, _, err := readProviders(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	w.laterCharges = later.Charges
	c := &checker{world: w, now: now, interval: cfg.Interval, repairWindow: cfg.RepairWindow, holdMargin: cfg.HoldMargin}
	c.report.Orders, c.report.Attempts = len(w.orders), len(w.attempts)
	c.report.Charges, c.report.ChargeRequests = len(ps.Charges), len(w.requests)
	c.report.Refunds, c.report.RefundRequests = len(ps.Refunds), len(w.refundRequests)
	c.report.RefundsByStatus, c.report.LateCharges = map[chargeonce.RefundStatus]int{}, map[chargeonce.LateChargeDecision]int{}
	for _, r := range w.ours {
		c.report.RefundsByStatus[r.Status]++
	}
	for _, lc := range w.late {
		c.report.LateCharges[lc.Decision]++
	}
	c.report.Holds, c.report.Moves = map[chargeonce.HoldStatus]int{}, map[string]int{}
	for id, h := range w.holds {
		c.report.Holds[h.Status]++
		for _, m := range w.moves[id] {
			c.report.Moves[string(m.Kind)+" "+string(m.Status)]++
		}
	}
	c.report.Violations = append(c.report.Violations, at.shared...)
	c.noDoubleCharge()
	c.chargesMatchAttempts()
	c.oneKeyPerAttempt()
	c.noOverdueAttempt()
	c.amountsAgree()
	c.holdAmountsAgree()
	c.nothingChargedWhenNotProcessed()
	c.noOverRefund()
	c.refundsMatchIntents()
	c.captureWithinHold()
	c.refundsWithinCapture()
	c.noMoveAfterEnd()
	c.holdEndsOnce()
	c.noOverdueHold()
	books := append([]string{chargeonce.DefaultProvider}, slices.Sorted(maps.Keys(cfg.Others))...)
	if err := c.booksBalance(ctx, cfg.Store, books, cfg.SettlementDates); err != nil {
		return Report{}, err
	}
	if err := c.workflowsHealthy(ctx, cfg.Temporal, cfg.HistoryLimit, cfg.VisibilityWait); err != nil {
		return Report{}, err
	}
	sort.SliceStable(c.report.Violations, func(i, j int) bool {
		a, b := c.report.Violations[i], c.report.Violations[j]
		if a.Invariant != b.Invariant {
			return a.Invariant < b.Invariant
		}
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.ChargeID < b.ChargeID
	})
	return c.report, nil
}

// world is everything Check reads, indexed.
type world struct {
	orders   map[int64]store.Order
	attempts map[string]store.Attempt // by key
	// byOrder lists each order's attempts, oldest first.
	byOrder  map[int64][]store.Attempt
	charges  []fakeprovider.Charge
	requests []fakeprovider.RequestRecord
	// laterCharges is the provider's charges read again after the store.
	laterCharges []fakeprovider.Charge
	// refunds are the provider's, refundRequests the refund requests it
	// received; ours are our refund intents by key, of the orders read and
	// of the provider's refunds.
	refunds        []fakeprovider.Refund
	refundRequests []fakeprovider.RequestRecord
	ours           map[string]store.Refund
	// late is what the repair decided, by charge id, for the provider's
	// successful charges.
	late map[string]store.RecordedLateCharge
	// at says which provider holds each charge and refund, and which
	// received each key's charge requests.
	at placement
	// holds are the holds of the orders read, by order, and moves their
	// captures and voids, oldest first.
	holds map[int64]store.Hold
	moves map[int64][]store.Move
}

// load reads the orders asked for and those the provider's charges and
// requests lead to, with their attempts.
func load(ctx context.Context, st store.Store, orderIDs []int64, ps ProviderState, at placement) (*world, error) {
	w := &world{
		at:       at,
		orders:   map[int64]store.Order{},
		attempts: map[string]store.Attempt{},
		byOrder:  map[int64][]store.Attempt{},
		charges:  ps.Charges,
		refunds:  ps.Refunds,
		ours:     map[string]store.Refund{},
		late:     map[string]store.RecordedLateCharge{},
		holds:    map[int64]store.Hold{},
		moves:    map[int64][]store.Move{},
	}
	for _, r := range ps.Requests {
		switch {
		case r.IsCharge():
			w.requests = append(w.requests, r)
		case r.IsRefund():
			w.refundRequests = append(w.refundRequests, r)
		}
	}
	want := map[int64]bool{}
	for _, id := range orderIDs {
		want[id] = true
	}
	for _, ch := range ps.Charges {
		if _, id, _, err := chargeonce.ParseMerchantReference(ch.MerchantReference); err == nil {
			want[id] = true
		}
	}
	// A request with a key of ours leads to its order even when it made no
	// charge.
	looked := map[string]bool{}
	for _, r := range w.requests {
		if r.Key == "" || r.Fingerprint == "" || looked[r.Key] {
			continue
		}
		looked[r.Key] = true
		a, err := st.GetAttempt(ctx, r.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("invariant: attempt %s: %w", r.Key, err)
		}
		want[a.OrderID] = true
	}
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		o, attempts, err := st.GetOrder(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // a charge naming an unknown order is reported below
		}
		if err != nil {
			return nil, fmt.Errorf("invariant: order %d: %w", id, err)
		}
		w.orders[id] = o
		w.byOrder[id] = attempts
		for _, a := range attempts {
			w.attempts[a.Key] = a
		}
		refunds, err := st.OrderRefunds(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("invariant: refunds of order %d: %w", id, err)
		}
		for _, r := range refunds {
			w.ours[r.Key] = r
		}
		if err := w.loadHolds(ctx, st, id, attempts); err != nil {
			return nil, err
		}
	}
	if err := w.loadRepairs(ctx, st); err != nil {
		return nil, err
	}
	return w, nil
}

type checker struct {
	*world
	now          time.Time
	interval     time.Duration
	repairWindow time.Duration
	holdMargin   time.Duration
	report       Report
}

func (c *checker) add(v Violation) { c.report.Violations = append(c.report.Violations, v) }

// orderOf is the order a charge's reference names, 0 when it names none.
func orderOf(ch fakeprovider.Charge) int64 {
	_, id, _, err := chargeonce.ParseMerchantReference(ch.MerchantReference)
	if err != nil {
		return 0
	}
	return id
}

func (c *checker) succeeded() []fakeprovider.Charge {
	return succeededOf(c.charges)
}

func succeededOf(charges []fakeprovider.Charge) []fakeprovider.Charge {
	var out []fakeprovider.Charge
	for _, ch := range charges {
		if ch.Status == fakeprovider.ChargeSucceeded {
			out = append(out, ch)
		}
	}
	return out
}

// Invariant 1. Of an order's net charges, the one that pays it (its
// provider_payment_id, or the oldest when it records none) is its own; every
// other is a violation unless its repair is under way within the window.
func (c *checker) noDoubleCharge() {
	refunded := c.refundedAtProvider()
	byOrder := map[int64][]fakeprovider.Charge{}
	for _, ch := range c.succeeded() {
		if id := orderOf(ch); id != 0 && refunded[ch.ID] < taken(ch) {
			byOrder[id] = append(byOrder[id], ch)
		}
	}
	for id, chs := range byOrder {
		if len(chs) < 2 {
			continue
		}
		ids := make([]string, len(chs))
		paying := 0
		for i, ch := range chs {
			ids[i] = ch.ID
			if ch.ID == c.orders[id].ProviderPaymentID {
				paying = i
			}
		}
		for i, ch := range chs {
			if i == paying {
				continue
			}
			repairing, state := c.repairing(ch)
			if repairing {
				continue
			}
			c.add(Violation{Invariant: NoDoubleCharge, Order: id, Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("order keeps %d net charges: %s; %s", len(chs), strings.Join(ids, ", "), state)})
		}
	}
}

// Invariant 2.
func (c *checker) chargesMatchAttempts() {
	byRef := map[string]store.Attempt{}
	for _, a := range c.attempts {
		byRef[a.MerchantReference] = a
	}
	for _, ch := range c.succeeded() {
		v := Violation{Invariant: ChargesMatchAttempts, Order: orderOf(ch), Key: ch.IdempotencyKey, ChargeID: ch.ID}
		if lc, repaired := c.late[ch.ID]; repaired {
			// Adopted, it must pay its order; refunded, invariant 1
			// holds it to its window.
			if lc.Decision == chargeonce.LateChargeAdopted && c.orders[lc.OrderID].ProviderPaymentID != ch.ID {
				v.Message = fmt.Sprintf("late charge adopted by order %d, which is paid by %q", lc.OrderID, c.orders[lc.OrderID].ProviderPaymentID)
				c.add(v)
			}
			continue
		}
		a, ok := c.attempts[ch.IdempotencyKey]
		if !ok && ch.IdempotencyKey == "" {
			// A charge that no request of ours made, such as one the
			// provider finished late: its reference names the attempt.
			a, ok = byRef[ch.MerchantReference]
		}
		if ok && a.Status != chargeonce.AttemptOpen && (a.Status != chargeonce.AttemptSucceeded || a.ProviderPaymentID != ch.ID) {
			if repairing, state := c.repairing(ch); repairing {
				continue
			} else if a.Status != chargeonce.AttemptSucceeded {
				v.Message = fmt.Sprintf("successful charge for an attempt marked %s; %s", a.Status, state)
				c.add(v)
				continue
			}
		}
		switch {
		case !ok:
			v.Message = "successful charge under a key that belongs to no attempt"
		case a.MerchantReference != ch.MerchantReference:
			v.Message = fmt.Sprintf("successful charge with reference %q under the key of an attempt with reference %q", ch.MerchantReference, a.MerchantReference)
		case c.at.charges[ch.ID] != a.Provider:
			v.Message = fmt.Sprintf("successful charge at provider %s for an attempt sent to %s", c.at.charges[ch.ID], a.Provider)
		case a.Status == chargeonce.AttemptOpen:
			// Still being settled; invariant 4 reports it if it stays open.
			continue
		case a.Status != chargeonce.AttemptSucceeded:
			v.Message = fmt.Sprintf("successful charge for an attempt marked %s", a.Status)
		case a.ProviderPaymentID != ch.ID:
			v.Message = fmt.Sprintf("the attempt records charge %q, not this one", a.ProviderPaymentID)
		default:
			continue
		}
		c.add(v)
	}
	// A succeeded attempt of a manual capture has its hold, which may
	// have been voided or may have expired since: every charge but a
	// failed one counts.
	byReference := map[string][]fakeprovider.Charge{}
	for _, ch := range c.laterCharges {
		if ch.Status != fakeprovider.ChargeFailed {
			byReference[ch.MerchantReference] = append(byReference[ch.MerchantReference], ch)
		}
	}
	for _, a := range c.sortedAttempts() {
		if a.Status != chargeonce.AttemptSucceeded {
			continue
		}
		v := Violation{Invariant: ChargesMatchAttempts, Order: a.OrderID, Key: a.Key, ChargeID: a.ProviderPaymentID}
		chs := byReference[a.MerchantReference]
		switch {
		case len(chs) == 0:
			v.Message = "attempt marked succeeded has no successful charge at the provider"
		case len(chs) > 1:
			v.Message = fmt.Sprintf("attempt marked succeeded has %d successful charges at the provider", len(chs))
		case chs[0].ID != a.ProviderPaymentID:
			v.Message = fmt.Sprintf("attempt records charge %q, the provider holds %q", a.ProviderPaymentID, chs[0].ID)
		default:
			o := c.orders[a.OrderID]
			if c.pays(o, a.ProviderPaymentID) {
				continue
			}
			if _, repaired := c.late[a.ProviderPaymentID]; repaired && o.Status.Paid() {
				// It succeeded after another charge paid the order, and
				// the repair refunds it.
				continue
			}
			v.Message = fmt.Sprintf("attempt succeeded but its order is %s with charge %q", o.Status, o.ProviderPaymentID)
		}
		c.add(v)
	}
	for _, id := range c.sortedOrders() {
		o := c.orders[id]
		if !o.Status.Paid() {
			continue
		}
		n := 0
		for _, a := range c.byOrder[id] {
			if a.Status == chargeonce.AttemptSucceeded && a.ProviderPaymentID == o.ProviderPaymentID {
				n++
			}
		}
		if lc, ok := c.late[o.ProviderPaymentID]; ok && lc.Decision == chargeonce.LateChargeAdopted && lc.OrderID == id {
			n++
		}
		if n != 1 {
			c.add(Violation{Invariant: ChargesMatchAttempts, Order: id, ChargeID: o.ProviderPaymentID,
				Message: fmt.Sprintf("paid order's charge is that of %d succeeded attempts and adopted late charges", n)})
		}
	}
}

// Invariant 3.
func (c *checker) oneKeyPerAttempt() {
	for _, ch := range c.charges {
		if ch.IdempotencyKey == "" {
			// No request made it, so it was sent under no key.
			continue
		}
		_, _, refKey, err := chargeonce.ParseMerchantReference(ch.MerchantReference)
		switch {
		case err != nil:
			c.add(Violation{Invariant: OneKeyPerAttempt, Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("charge reference %q is not one of ours", ch.MerchantReference)})
		case refKey != ch.IdempotencyKey:
			c.add(Violation{Invariant: OneKeyPerAttempt, Order: orderOf(ch), Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("charge sent with key %s under the reference of key %s", ch.IdempotencyKey, refKey)})
		}
	}
	fingerprints := map[string]map[string]bool{}
	for _, r := range c.requests {
		// A request the provider refused before reading a valid body
		// changed nothing and belongs to no attempt.
		if r.Key == "" || r.Fingerprint == "" {
			continue
		}
		if fingerprints[r.Key] == nil {
			fingerprints[r.Key] = map[string]bool{}
		}
		fingerprints[r.Key][r.Fingerprint] = true
	}
	for _, key := range sortedKeys(fingerprints) {
		a, ok := c.attempts[key]
		if !ok {
			c.add(Violation{Invariant: OneKeyPerAttempt, Key: key,
				Message: "the provider received a charge under a key that belongs to no attempt"})
			continue
		}
		if n := len(fingerprints[key]); n > 1 {
			c.add(Violation{Invariant: OneKeyPerAttempt, Order: a.OrderID, Key: key,
				Message: fmt.Sprintf("one key sent with %d different bodies", n)})
		}
		if at := slices.Sorted(maps.Keys(c.at.keys[key])); len(at) != 1 || at[0] != a.Provider {
			c.add(Violation{Invariant: OneKeyPerAttempt, Order: a.OrderID, Key: key,
				Message: fmt.Sprintf("the key of an attempt sent to %s reached %s", a.Provider, strings.Join(at, " and "))})
		}
	}
	refs := map[string]string{}
	for _, a := range c.sortedAttempts() {
		if other, dup := refs[a.MerchantReference]; dup {
			c.add(Violation{Invariant: OneKeyPerAttempt, Order: a.OrderID, Key: a.Key,
				Message: fmt.Sprintf("reference %q shared with attempt %s", a.MerchantReference, other)})
		}
		refs[a.MerchantReference] = a.Key
		if _, id, refKey, err := chargeonce.ParseMerchantReference(a.MerchantReference); err != nil || refKey != a.Key || id != a.OrderID {
			c.add(Violation{Invariant: OneKeyPerAttempt, Order: a.OrderID, Key: a.Key,
				Message: fmt.Sprintf("attempt reference %q does not name its own order and key", a.MerchantReference)})
		}
		for _, r := range a.Requests {
			if r.Key != a.Key {
				c.add(Violation{Invariant: OneKeyPerAttempt, Order: a.OrderID, Key: a.Key,
					Message: fmt.Sprintf("request log entry at %s carries key %s", r.At.Format(time.RFC3339Nano), r.Key)})
			}
		}
	}
}

// Invariant 4.
func (c *checker) noOverdueAttempt() {
	for _, a := range c.sortedAttempts() {
		if a.Status != chargeonce.AttemptOpen {
			continue
		}
		if late := c.now.Sub(a.AbandonAt.Add(c.interval)); late > 0 {
			c.add(Violation{Invariant: NoOverdueAttempt, Order: a.OrderID, Key: a.Key,
				Message: fmt.Sprintf("open %s past its abandon deadline %s plus one interval (%s)", late.Round(time.Millisecond), a.AbandonAt.Format(time.RFC3339Nano), c.interval)})
		}
	}
}

// Invariant 5.
func (c *checker) amountsAgree() {
	for _, a := range c.sortedAttempts() {
		if o := c.orders[a.OrderID]; o.Amount != a.Amount {
			c.add(Violation{Invariant: AmountsAgree, Order: a.OrderID, Key: a.Key,
				Message: fmt.Sprintf("attempt amount %s differs from order amount %s", a.Amount, o.Amount)})
		}
	}
	for _, ch := range c.charges {
		id := orderOf(ch)
		o, known := c.orders[id]
		if !known {
			c.add(Violation{Invariant: AmountsAgree, Order: id, Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("charge of %d %s for an order the merchant does not have", ch.Amount, ch.Currency)})
			continue
		}
		if ch.Amount != o.Amount.Minor || ch.Currency != o.Amount.Currency {
			c.add(Violation{Invariant: AmountsAgree, Order: id, Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("charge of %d %s for an order of %d %s", ch.Amount, ch.Currency, o.Amount.Minor, o.Amount.Currency)})
		}
	}
}

// Invariant 7. It reads the charges taken after the store, which hold every
// charge an attempt read as settled can have. The provider keeps a charge,
// with its key and reference, after it forgets the key itself, so the
// promise is checked past the key's retention too.
func (c *checker) nothingChargedWhenNotProcessed() {
	for _, a := range c.sortedAttempts() {
		if a.Status != chargeonce.AttemptNotProcessed {
			continue
		}
		for _, ch := range c.laterCharges {
			if ch.IdempotencyKey != a.Key && ch.MerchantReference != a.MerchantReference {
				continue
			}
			c.add(Violation{Invariant: NothingChargedWhenNotProcessed, Order: a.OrderID, Key: a.Key, ChargeID: ch.ID,
				Message: fmt.Sprintf("attempt marked not_processed has a %s charge at the provider", ch.Status)})
		}
	}
}

func (c *checker) sortedAttempts() []store.Attempt {
	out := make([]store.Attempt, 0, len(c.attempts))
	for _, id := range c.sortedOrders() {
		out = append(out, c.byOrder[id]...)
	}
	return out
}

func (c *checker) sortedOrders() []int64 {
	ids := make([]int64, 0, len(c.orders))
	for id := range c.orders {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
