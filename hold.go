package chargeonce

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// CaptureMode says when a payment's money is taken: at once, or later by a
// capture of the hold that the checkout authorized.
type CaptureMode string

// The capture modes.
const (
	// CaptureAutomatic takes the money at checkout: the order ends paid.
	// It is what an empty mode means, in the inputs of every workflow
	// started before holds existed.
	CaptureAutomatic CaptureMode = "automatic"
	// CaptureManual only authorizes the amount at checkout: the order ends
	// authorized, and a capture or a void ends the hold, or its deadline
	// does (DeadlineAction).
	CaptureManual CaptureMode = "manual"
)

// Valid reports whether m is a capture mode; empty is automatic.
func (m CaptureMode) Valid() bool {
	return m == "" || m == CaptureAutomatic || m == CaptureManual
}

// Manual reports whether m authorizes only.
func (m CaptureMode) Manual() bool { return m == CaptureManual }

// DeadlineAction is what the hold's deadline does to a hold that nobody
// captured or voided in time.
type DeadlineAction string

// The deadline actions.
const (
	// DeadlineVoid releases the hold: the customer is charged nothing. It
	// is the default, and what an empty action means.
	DeadlineVoid DeadlineAction = "void"
	// DeadlineCapture captures the whole hold.
	DeadlineCapture DeadlineAction = "capture"
)

// Valid reports whether a is a deadline action; empty is void.
func (a DeadlineAction) Valid() bool {
	return a == "" || a == DeadlineVoid || a == DeadlineCapture
}

// Move is the move that the action makes at the deadline.
func (a DeadlineAction) Move() MoveKind {
	if a == DeadlineCapture {
		return MoveCapture
	}
	return MoveVoid
}

// HoldStatus is where a hold stands. A hold is authorized until exactly one
// of captured, voided or expired ends it, and an ended hold never changes.
type HoldStatus string

// The hold statuses.
const (
	// HoldAuthorized: the amount is reserved on the card and nothing is
	// taken yet.
	HoldAuthorized HoldStatus = "authorized"
	// HoldCaptured: a capture took the money, all or part of it; the rest
	// was released.
	HoldCaptured HoldStatus = "captured"
	// HoldVoided: a void released the hold; nothing was taken.
	HoldVoided HoldStatus = "voided"
	// HoldExpired: the provider released the hold at its expiry; nothing
	// was taken.
	HoldExpired HoldStatus = "expired"
)

// Valid reports whether s is one of the hold statuses.
func (s HoldStatus) Valid() bool {
	switch s {
	case HoldAuthorized, HoldCaptured, HoldVoided, HoldExpired:
		return true
	}
	return false
}

// Ended reports whether s is a status that nothing changes again.
func (s HoldStatus) Ended() bool {
	return s.Valid() && s != HoldAuthorized
}

// OrderStatus is the status of an order whose hold is in status s: the
// order shows its hold one for one.
func (s HoldStatus) OrderStatus() OrderStatus {
	return OrderStatus(s)
}

// MoveKind names a move that ends a hold.
type MoveKind string

// The moves of a hold.
const (
	// MoveCapture takes money from the hold.
	MoveCapture MoveKind = "capture"
	// MoveVoid releases the hold.
	MoveVoid MoveKind = "void"
)

// Valid reports whether k is one of the move kinds.
func (k MoveKind) Valid() bool { return k == MoveCapture || k == MoveVoid }

// Ends is the status of a hold that a move of kind k ended.
func (k MoveKind) Ends() HoldStatus {
	if k == MoveCapture {
		return HoldCaptured
	}
	return HoldVoided
}

// Operation is the money movement a move of kind k runs as.
func (k MoveKind) Operation() Operation {
	if k == MoveCapture {
		return OperationCapture
	}
	return OperationVoid
}

// MoveStatus is where a capture or a void stands. A move is pending until
// the provider's answer is known, as a refund is.
type MoveStatus string

// The move statuses.
const (
	// MovePending: the outcome is not known yet.
	MovePending MoveStatus = "pending"
	// MoveSucceeded: the provider captured or voided the hold.
	MoveSucceeded MoveStatus = "succeeded"
	// MoveDeclined: the provider refused the move because of the hold's
	// state, with one of the port's hold decline codes (provider.HoldStatusOf).
	MoveDeclined MoveStatus = "declined"
	// MoveFailed: the provider refused the request as a contract
	// violation, which is a bug on our side and needs a human.
	MoveFailed MoveStatus = "failed"
	// MoveNotProcessed: no request of the move can have been processed, so
	// the hold is as it was, and the move may be asked for again.
	MoveNotProcessed MoveStatus = "not_processed"
)

// Valid reports whether s is one of the move statuses.
func (s MoveStatus) Valid() bool {
	switch s {
	case MovePending, MoveSucceeded, MoveDeclined, MoveFailed, MoveNotProcessed:
		return true
	}
	return false
}

// Settled reports whether the provider's answer is known: every status but
// pending.
func (s MoveStatus) Settled() bool { return s.Valid() && s != MovePending }

// Holds reports whether a move in status s keeps every other move of its
// hold out: a pending one may yet end the hold, and a succeeded one has.
// A hold has at most one move that holds, so that it is captured or voided
// once.
func (s MoveStatus) Holds() bool { return s == MovePending || s == MoveSucceeded }

// MoveOrigin says who asked for a move.
type MoveOrigin string

// The origins of a move.
const (
	// MoveByMerchant: the merchant asked through the API.
	MoveByMerchant MoveOrigin = "merchant"
	// MoveByDeadline: the hold's deadline came with the hold still
	// authorized (DeadlineAction).
	MoveByDeadline MoveOrigin = "deadline"
)

// Valid reports whether o is one of the move origins.
func (o MoveOrigin) Valid() bool { return o == MoveByMerchant || o == MoveByDeadline }

// MoveIntent is one capture or one void of one hold: the same hold, kind
// and amount on every request. Every request sent to the provider for it
// carries its Key, which is also the ID of the workflow that sends it.
type MoveIntent struct {
	// Key is the idempotency key sent to the provider, a UUIDv7 stored
	// before the first request. It is ours, not the key of the API request
	// that asked for the move.
	Key string `json:"key"`
	// Kind is capture or void.
	Kind MoveKind `json:"kind"`
	// OrderID is the merchant's order.
	OrderID int64 `json:"orderId"`
	// AttemptKey is the key of the payment attempt that authorized the
	// hold, and the ID of its payment workflow, which keeps the hold's
	// deadline.
	AttemptKey string `json:"attemptKey"`
	// ChargeID is the provider's id of the hold.
	ChargeID string `json:"chargeId"`
	// Amount is what a capture takes, at most the authorized amount; for a
	// void, the authorized amount it releases.
	Amount Money `json:"amount"`
	// MerchantReference tells the move in the provider's events and in
	// logs (MoveReference).
	MerchantReference string `json:"merchantReference"`
	// Origin says who asked for the move.
	Origin MoveOrigin `json:"origin"`
	// CreatedAt is when the intent was stored; the key's retention counts
	// from it.
	CreatedAt time.Time `json:"createdAt"`
	// Provider names the provider that holds the hold.
	Provider string `json:"provider"`
}

// Validate checks that the intent can be sent.
func (m MoveIntent) Validate() error {
	switch {
	case !ValidKey(m.Key):
		return fmt.Errorf("move intent: key %q is not a UUID", m.Key)
	case !m.Kind.Valid():
		return fmt.Errorf("move intent: unknown kind %q", m.Kind)
	case m.OrderID <= 0:
		return fmt.Errorf("move intent: order ID %d is not positive", m.OrderID)
	case !ValidKey(m.AttemptKey):
		return fmt.Errorf("move intent: attempt key %q is not a UUID", m.AttemptKey)
	case m.ChargeID == "":
		return errors.New("move intent: charge ID is empty")
	case m.MerchantReference == "":
		return errors.New("move intent: merchant reference is empty")
	case !m.Origin.Valid():
		return fmt.Errorf("move intent: unknown origin %q", m.Origin)
	case m.CreatedAt.IsZero():
		return errors.New("move intent: creation time is missing")
	case m.Provider == "":
		return errors.New("move intent: provider name is empty")
	}
	if _, err := NewMoney(m.Amount.Minor, m.Amount.Currency); err != nil {
		return fmt.Errorf("move intent: %w", err)
	}
	return nil
}

// MoveReference builds the reference of a move: "<prefix>-capture-<key
// without dashes>" or "<prefix>-void-<key without dashes>". Like a
// refund's, it cannot be read as a payment's reference.
func MoveReference(prefix string, kind MoveKind, key string) string {
	return prefix + "-" + string(kind) + "-" + strings.ReplaceAll(key, "-", "")
}

var moveReferencePattern = regexp.MustCompile(`^([a-z][a-z0-9_]*)-(capture|void)-([0-9a-f]{32})$`)

// ParseMoveReference splits a reference built by MoveReference into its
// prefix, kind and key (with its dashes restored).
func ParseMoveReference(ref string) (prefix string, kind MoveKind, key string, err error) {
	m := moveReferencePattern.FindStringSubmatch(ref)
	if m == nil {
		return "", "", "", fmt.Errorf("merchant reference %q is not of the form <prefix>-capture-<key> or <prefix>-void-<key>", ref)
	}
	k := m[3]
	return m[1], MoveKind(m[2]), k[0:8] + "-" + k[8:12] + "-" + k[12:16] + "-" + k[16:20] + "-" + k[20:32], nil
}

// HoldDeadline is when chargeonce ends a hold authorized at authorizedAt
// that nobody captured or voided: margin before the earlier of the
// provider's expiry (captureBefore, zero when the provider did not say)
// and the end of the provider's hold window, counted from authorizedAt.
// The margin leaves the deadline's own move time to reach the provider
// before the hold expires there.
func HoldDeadline(authorizedAt, captureBefore time.Time, window, margin time.Duration) time.Time {
	expiry := authorizedAt.Add(window)
	if !captureBefore.IsZero() && captureBefore.Before(expiry) {
		expiry = captureBefore
	}
	return expiry.Add(-margin)
}

// CaptureAmount is the capture amount invariant: a hold of authorized is
// captured once, for at most what it holds. It returns what a capture of
// requested minor units takes (0 asks for all of it), and false when that
// is more than the hold or not positive.
func CaptureAmount(authorized Money, requested int64) (Money, bool) {
	if requested == 0 {
		requested = authorized.Minor
	}
	if requested <= 0 || requested > authorized.Minor {
		return Money{}, false
	}
	return Money{Minor: requested, Currency: authorized.Currency}, true
}
