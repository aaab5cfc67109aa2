package chargeonce_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

var (
	orderStatuses = []chargeonce.OrderStatus{chargeonce.OrderPlaced, chargeonce.OrderPaymentPending, chargeonce.OrderPaid, chargeonce.OrderPartiallyRefunded, chargeonce.OrderRefunded,
		chargeonce.OrderAuthorized, chargeonce.OrderCaptured, chargeonce.OrderVoided, chargeonce.OrderExpired}
	attemptStatuses = []chargeonce.AttemptStatus{chargeonce.AttemptOpen, chargeonce.AttemptSucceeded, chargeonce.AttemptDeclined, chargeonce.AttemptAbandoned, chargeonce.AttemptFailed, chargeonce.AttemptNotProcessed}
)

// move is one arrow of a drawn state machine; label is the event kind of
// an order's arrow, and empty for an attempt's.
type move struct{ from, to, label string }

// arrow is a Mermaid state-diagram transition: "a --> b" with an optional
// ": label" whose first word is kept.
var arrow = regexp.MustCompile(`^\s*(\S+)\s*-->\s*(\S+?)\s*(?::\s*(\S+).*)?$`)

// drawnMoves returns the arrows of the mermaid block under the heading of
// docs/design.md, without the start state's.
func drawnMoves(t *testing.T, heading string, labelled bool) []move {
	t.Helper()
	f, err := os.Open("docs/design.md")
	require.NoError(t, err)
	defer f.Close()
	var (
		moves                   []move
		underHeading, inDiagram bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			underHeading = line == heading
		case underHeading && line == "```mermaid":
			inDiagram = true
		case inDiagram && line == "```":
			require.NotEmpty(t, moves, "the diagram under %q draws no move", heading)
			return moves
		case inDiagram:
			m := arrow.FindStringSubmatch(line)
			if m == nil || m[1] == "[*]" {
				continue
			}
			mv := move{from: m[1], to: m[2]}
			if labelled {
				mv.label = m[3]
			}
			moves = append(moves, mv)
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("docs/design.md has no mermaid diagram under %q", heading)
	return nil
}

// orderEvents are every event an order can meet, with each attempt status
// an attempt can settle as, each status a hold can end in, and refunds that
// sum to nothing, part or all of a charge or a captured hold.
func orderEvents() []chargeonce.OrderEvent {
	events := []chargeonce.OrderEvent{
		{Kind: chargeonce.OrderAttemptStarted},
		{Kind: chargeonce.OrderLateChargeAdopted},
		{Kind: chargeonce.OrderHoldAuthorized},
	}
	for _, h := range []chargeonce.HoldStatus{chargeonce.HoldAuthorized, chargeonce.HoldCaptured, chargeonce.HoldVoided, chargeonce.HoldExpired} {
		events = append(events, chargeonce.OrderEvent{Kind: chargeonce.OrderHoldEnded, Hold: h})
	}
	for _, s := range attemptStatuses {
		if chargeonce.AttemptOpen.CanSettleAs(s) {
			events = append(events, chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptSettled, Attempt: s})
		}
	}
	for _, refunded := range []int64{0, 40, 100} {
		for _, captured := range []bool{false, true} {
			events = append(events, chargeonce.OrderEvent{Kind: chargeonce.OrderRefundsSettled, Charged: 100, Refunded: refunded, Captured: captured})
		}
	}
	return events
}

// TestStateMachines_TheCodeMovesAsDrawn holds the state machines drawn in
// docs/design.md to the functions that own the moves: every move the code
// makes is drawn, and every drawn move is one the code makes.
func TestStateMachines_TheCodeMovesAsDrawn(t *testing.T) {
	t.Run("order", func(t *testing.T) {
		var code []move
		for _, s := range orderStatuses {
			for _, e := range orderEvents() {
				if next := chargeonce.NextOrderStatus(s, e); next != s {
					code = append(code, move{string(s), string(next), string(e.Kind)})
				}
			}
		}
		requireSameMoves(t, code, drawnMoves(t, "### An order's statuses", true))
	})
	t.Run("attempt", func(t *testing.T) {
		var code []move
		for _, s := range attemptStatuses {
			for _, next := range attemptStatuses {
				if s.CanSettleAs(next) {
					code = append(code, move{from: string(s), to: string(next)})
				}
			}
		}
		requireSameMoves(t, code, drawnMoves(t, "### An attempt's statuses", false))
	})
}

func requireSameMoves(t *testing.T, code, drawn []move) {
	t.Helper()
	for _, m := range code {
		require.Contains(t, drawn, m, "the code moves %s → %s on %q, which docs/design.md does not draw", m.from, m.to, m.label)
	}
	for _, m := range drawn {
		require.Contains(t, code, m, "docs/design.md draws %s → %s on %q, which the code never makes", m.from, m.to, m.label)
	}
	require.Equal(t, len(slices.Compact(sorted(drawn))), len(drawn), "docs/design.md draws a move twice")
}

func sorted(ms []move) []move {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b move) int { return strings.Compare(a.from+a.to+a.label, b.from+b.to+b.label) })
	return ms
}

func TestNextOrderStatus(t *testing.T) {
	settled := func(s chargeonce.AttemptStatus) chargeonce.OrderEvent {
		return chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptSettled, Attempt: s}
	}
	refunds := func(refunded int64) chargeonce.OrderEvent {
		return chargeonce.OrderEvent{Kind: chargeonce.OrderRefundsSettled, Charged: 100, Refunded: refunded}
	}
	ended := func(h chargeonce.HoldStatus) chargeonce.OrderEvent {
		return chargeonce.OrderEvent{Kind: chargeonce.OrderHoldEnded, Hold: h}
	}
	tests := []struct {
		name  string
		from  chargeonce.OrderStatus
		event chargeonce.OrderEvent
		want  chargeonce.OrderStatus
	}{
		{"an attempt starts on a placed order", chargeonce.OrderPlaced, chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptStarted}, chargeonce.OrderPaymentPending},
		{"no attempt starts on a paid order", chargeonce.OrderPaid, chargeonce.OrderEvent{Kind: chargeonce.OrderAttemptStarted}, chargeonce.OrderPaid},
		{"a success pays", chargeonce.OrderPaymentPending, settled(chargeonce.AttemptSucceeded), chargeonce.OrderPaid},
		{"a decline offers it again", chargeonce.OrderPaymentPending, settled(chargeonce.AttemptDeclined), chargeonce.OrderPlaced},
		{"nothing processed offers it again", chargeonce.OrderPaymentPending, settled(chargeonce.AttemptNotProcessed), chargeonce.OrderPlaced},
		{"a failed attempt waits for a person", chargeonce.OrderPaymentPending, settled(chargeonce.AttemptFailed), chargeonce.OrderPaymentPending},
		{"a late answer never unpays an adopted order", chargeonce.OrderPaid, settled(chargeonce.AttemptAbandoned), chargeonce.OrderPaid},
		{"an adopted charge pays a placed order", chargeonce.OrderPlaced, chargeonce.OrderEvent{Kind: chargeonce.OrderLateChargeAdopted}, chargeonce.OrderPaid},
		{"a paid order adopts nothing", chargeonce.OrderRefunded, chargeonce.OrderEvent{Kind: chargeonce.OrderLateChargeAdopted}, chargeonce.OrderRefunded},
		{"part refunded", chargeonce.OrderPaid, refunds(40), chargeonce.OrderPartiallyRefunded},
		{"all refunded", chargeonce.OrderPartiallyRefunded, refunds(100), chargeonce.OrderRefunded},
		{"a refund failed after success", chargeonce.OrderRefunded, refunds(40), chargeonce.OrderPartiallyRefunded},
		{"refunds never move an unpaid order", chargeonce.OrderPlaced, refunds(100), chargeonce.OrderPlaced},
		{"a hold authorizes a pending order", chargeonce.OrderPaymentPending, chargeonce.OrderEvent{Kind: chargeonce.OrderHoldAuthorized}, chargeonce.OrderAuthorized},
		{"a hold never authorizes a paid order", chargeonce.OrderPaid, chargeonce.OrderEvent{Kind: chargeonce.OrderHoldAuthorized}, chargeonce.OrderPaid},
		{"a capture ends the hold", chargeonce.OrderAuthorized, ended(chargeonce.HoldCaptured), chargeonce.OrderCaptured},
		{"an expiry ends the hold", chargeonce.OrderAuthorized, ended(chargeonce.HoldExpired), chargeonce.OrderExpired},
		{"an ended hold never ends again", chargeonce.OrderVoided, ended(chargeonce.HoldCaptured), chargeonce.OrderVoided},
		{"a captured order refunds", chargeonce.OrderCaptured, refunds(40), chargeonce.OrderPartiallyRefunded},
		{"a captured order's failed refunds leave it captured", chargeonce.OrderPartiallyRefunded,
			chargeonce.OrderEvent{Kind: chargeonce.OrderRefundsSettled, Charged: 100, Captured: true}, chargeonce.OrderCaptured},
		{"an authorized order adopts no late charge", chargeonce.OrderAuthorized, chargeonce.OrderEvent{Kind: chargeonce.OrderLateChargeAdopted}, chargeonce.OrderAuthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, chargeonce.NextOrderStatus(tt.from, tt.event))
		})
	}
}

func TestLateChargeFacts_Decide(t *testing.T) {
	try := chargeonce.Money{Minor: 54890, Currency: "TRY"}
	base := chargeonce.LateChargeFacts{OrderID: 7, OrderAmount: try, ChargeID: "ch_late", ChargeAmount: try}
	with := func(f func(*chargeonce.LateChargeFacts)) chargeonce.LateChargeFacts {
		c := base
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		facts chargeonce.LateChargeFacts
		want  chargeonce.LateChargeDecision
	}{
		{"an order not paid since adopts it", with(func(c *chargeonce.LateChargeFacts) { c.OrderStatus = chargeonce.OrderPlaced }), chargeonce.LateChargeAdopted},
		{"an order still waiting adopts it", with(func(c *chargeonce.LateChargeFacts) { c.OrderStatus = chargeonce.OrderPaymentPending }), chargeonce.LateChargeAdopted},
		{"the paying charge is known", with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.OrderPaidBy, c.Decided = chargeonce.OrderPaid, "ch_late", chargeonce.LateChargeAdopted
		}), chargeonce.LateChargeKnown},
		{"an order paid by another charge refunds it", with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.OrderPaidBy = chargeonce.OrderPaid, "ch_first"
		}), chargeonce.LateChargeRefunded},
		{"a refunded order refunds it too", with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.OrderPaidBy = chargeonce.OrderRefunded, "ch_first"
		}), chargeonce.LateChargeRefunded},
		{"another amount cannot pay the order", with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.ChargeAmount = chargeonce.OrderPlaced, chargeonce.Money{Minor: 100, Currency: "TRY"}
		}), chargeonce.LateChargeRefunded},
		{"refunded once, refunded for good", with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.Decided = chargeonce.OrderPlaced, chargeonce.LateChargeRefunded
		}), chargeonce.LateChargeRefunded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.facts.Decide()
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	t.Run("an adopted charge that no longer pays its order is an error", func(t *testing.T) {
		_, err := with(func(c *chargeonce.LateChargeFacts) {
			c.OrderStatus, c.OrderPaidBy, c.Decided = chargeonce.OrderPaid, "ch_other", chargeonce.LateChargeAdopted
		}).Decide()
		require.EqualError(t, err, `the charge was adopted by order 7, which is now paid by "ch_other"`)
	})
}

func TestLateChargeFacts_RefundReasonSaysWhy(t *testing.T) {
	try := chargeonce.Money{Minor: 54890, Currency: "TRY"}
	paid := chargeonce.LateChargeFacts{OrderID: 7, OrderStatus: chargeonce.OrderPaid, OrderPaidBy: "ch_first", OrderAmount: try, ChargeID: "ch_late", ChargeAmount: try}
	require.Equal(t, "late charge: order 7 was paid by charge ch_first", paid.RefundReason())
	other := chargeonce.LateChargeFacts{OrderID: 7, OrderStatus: chargeonce.OrderPlaced, OrderAmount: try, ChargeID: "ch_late", ChargeAmount: chargeonce.Money{Minor: 100, Currency: "TRY"}}
	require.Equal(t, "late charge: 1.00 TRY is not the amount of order 7, 548.90 TRY", other.RefundReason())
}

func TestRefundAmount_NeverPassesTheCharge(t *testing.T) {
	charge := chargeonce.Money{Minor: 10000, Currency: "TRY"}
	tests := []struct {
		name            string
		held, requested int64
		want            int64
		ok              bool
	}{
		{"all of a charge with no refunds", 0, 0, 10000, true},
		{"the rest", 2500, 0, 7500, true},
		{"a part within the rest", 2500, 7500, 7500, true},
		{"a part beyond the rest", 2500, 7501, 0, false},
		{"nothing left", 10000, 0, 0, false},
		{"a negative amount", 0, -1, 0, false},
		{"more held than charged, from a hand-made change", 12000, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := chargeonce.RefundAmount(charge, tt.held, tt.requested)
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, chargeonce.Money{Minor: tt.want, Currency: "TRY"}, got)
			}
		})
	}
	require.Equal(t, chargeonce.Money{Minor: 0, Currency: "TRY"}, chargeonce.RefundLimit(charge, 12000), "the limit is never negative")
}
