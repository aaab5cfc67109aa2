package store

import (
	"context"
	"errors"
	"time"

	"chargeonce"
)

// Errors of StartMove besides ErrNotFound. They are matched with
// errors.Is.
var (
	// ErrNotHeld: the order has no hold that is still authorized: it was
	// never authorized (a payment captured at once, or none yet), or its
	// hold was captured, voided or expired already.
	ErrNotHeld = errors.New("store: the order holds no authorization")
	// ErrHoldMoving: another capture or void of the hold is pending; its
	// outcome decides the hold first.
	ErrHoldMoving = errors.New("store: another move of the hold is pending")
	// ErrCaptureExceedsHold: the capture asks for more than the hold.
	ErrCaptureExceedsHold = errors.New("store: the capture exceeds the authorized amount")
)

// Hold is an authorization as stored: the hold that a payment attempt of a
// manual capture left on the card, and how it ended.
type Hold struct {
	// AttemptKey is the attempt that authorized the hold; its payment
	// workflow keeps the deadline.
	AttemptKey string
	OrderID    int64
	// ChargeID is the provider's id of the hold.
	ChargeID string
	// Provider names the provider that holds it: the attempt's.
	Provider string
	// Amount is what was authorized: the attempt's amount.
	Amount chargeonce.Money
	// Captured is what a capture took, in minor units of Amount's
	// currency; 0 unless Status is captured.
	Captured int64
	Status   chargeonce.HoldStatus
	// CaptureBefore is when the provider said the hold expires; zero when
	// it did not say.
	CaptureBefore time.Time
	// Deadline is when chargeonce ends the hold if nobody did
	// (chargeonce.HoldDeadline), by OnDeadline.
	Deadline   time.Time
	OnDeadline chargeonce.DeadlineAction
	// AuthorizedAt is when the attempt settled with the hold.
	AuthorizedAt time.Time
	// EndedAt is when the hold left authorized; nil while it is.
	EndedAt *time.Time
}

// NewHold is what SettleAuthorization stores of a hold.
type NewHold struct {
	// ChargeID is the provider's id of the hold; required.
	ChargeID string
	// CaptureBefore is the provider's expiry; zero when unknown.
	CaptureBefore time.Time
	// Deadline is when chargeonce ends the hold; required.
	Deadline time.Time
	// OnDeadline is what the deadline does; empty is void.
	OnDeadline chargeonce.DeadlineAction
	// At is when the attempt settled.
	At time.Time
}

// Move is one capture or void as stored: the intent, where it stands, and
// the API request that asked for it.
type Move struct {
	chargeonce.MoveIntent
	Status chargeonce.MoveStatus
	// DeclineCode is the provider's code for a declined move: one of the
	// port's hold decline codes.
	DeclineCode string
	// RequestKey and RequestFingerprint are the Idempotency-Key of the API
	// request that asked for the move and the fingerprint of its body;
	// both empty for a move of the deadline.
	RequestKey         string
	RequestFingerprint string
	// WorkflowStarted is false until the move's workflow is known to run;
	// the outbox sweep starts the ones left behind.
	WorkflowStarted bool
	// LastCheckedAt is when the provider was last asked about the move.
	LastCheckedAt *time.Time
	// SettledAt is when the move left pending; nil while pending.
	SettledAt *time.Time
	// Requests is the log of the move's exchanges with the provider,
	// oldest first; only GetMove loads it.
	Requests []chargeonce.ProviderRequest
}

// NewMove is what StartMove needs to find or create a capture or a void.
type NewMove struct {
	OrderID int64
	Kind    chargeonce.MoveKind
	// Amount is what a capture takes, in minor units of the hold's
	// currency; 0 takes all of it. A void's is 0: it releases the whole
	// hold, whose amount the move records.
	Amount int64
	Origin chargeonce.MoveOrigin
	// Key is a fresh UUIDv7, used only if a new move is created.
	Key string
	// ReferencePrefix starts the merchant reference of a new move
	// (chargeonce.MoveReference).
	ReferencePrefix string
	// RequestKey and RequestFingerprint are the API request's
	// Idempotency-Key (at most MaxRequestKeyLength bytes) and the
	// fingerprint of its body (a SHA-256 in lower-case hex); both empty for
	// a move of the deadline.
	RequestKey         string
	RequestFingerprint string
	// Now is the creation time of a new move.
	Now time.Time
}

// MoveDecision says what StartMove did.
type MoveDecision string

// The decisions of StartMove.
const (
	// MoveCreated: a new move was stored, pending.
	MoveCreated MoveDecision = "created"
	// MoveReplayed: a move with the same request key and fingerprint
	// exists; it is the move returned.
	MoveReplayed MoveDecision = "replayed"
	// MoveKeyReused: a move with the same request key and another
	// fingerprint exists; it is the move returned, and nothing changed.
	MoveKeyReused MoveDecision = "key_reused"
)

// HoldStore keeps holds and their moves: captures and voids, each with
// its own key and request log (Requests of chargeonce.OperationCapture
// and chargeonce.OperationVoid).
type HoldStore interface {
	// SettleAuthorization settles an open attempt as succeeded with the
	// hold h.ChargeID, stores the hold, authorized, and moves the order
	// from payment_pending to authorized (chargeonce.OrderHoldAuthorized),
	// in one transaction and conditionally, as SettleAttempt does: nothing
	// changes when the attempt was already terminal (Changed is false).
	SettleAuthorization(ctx context.Context, attemptKey string, h NewHold) (Settlement, error)
	// GetHold returns the hold of the attempt, or ErrNotFound.
	GetHold(ctx context.Context, attemptKey string) (Hold, error)
	// OrderHold returns the order's hold, or ErrNotFound when the order
	// has none.
	OrderHold(ctx context.Context, orderID int64) (Hold, error)
	// StartMove decides, in one transaction that locks the order, what a
	// capture or void request does. A move with the same RequestKey is
	// replayed when its fingerprint is the same, and key_reused otherwise;
	// a not_processed move frees its request key. The key decides before
	// the hold does. Otherwise the order's hold must be authorized
	// (ErrNotHeld), with no move that holds (chargeonce.MoveStatus.Holds):
	// ErrHoldMoving while that move is pending, ErrNotHeld once it
	// succeeded, since its success ends the hold. A void's NewMove.Amount
	// must be 0, and the move records the hold's amount. A capture's amount is checked by
	// chargeonce.CaptureAmount (ErrCaptureExceedsHold). The new move is
	// inserted pending, for the hold's charge, provider and attempt.
	// Concurrent calls for one hold never leave two moves that hold.
	// Errors: ErrNotFound (no such order), ErrNotHeld, ErrHoldMoving,
	// ErrCaptureExceedsHold, and ErrConflict when the new move's Key is
	// taken.
	StartMove(ctx context.Context, n NewMove) (Move, MoveDecision, error)
	// GetMove returns one move with its Requests, or ErrNotFound.
	GetMove(ctx context.Context, key string) (Move, error)
	// OrderMoves returns the moves of an order, oldest first, without
	// their Requests; ErrNotFound when there is no such order.
	OrderMoves(ctx context.Context, orderID int64) ([]Move, error)
	// MarkMoveWorkflowStarted records that the move's workflow runs,
	// which takes it out of the outbox.
	MarkMoveWorkflowStarted(ctx context.Context, key string) error
	// UnstartedMoves is the moves' outbox: pending moves created before
	// createdBefore whose workflow is not known to run, oldest first, at
	// most limit of them.
	UnstartedMoves(ctx context.Context, createdBefore time.Time, limit int) ([]Move, error)
	// MarkMoveChecked records when the provider was last asked about the
	// move.
	MarkMoveChecked(ctx context.Context, key string, at time.Time) error
	// SettleMove moves a pending move to a settled status, with the
	// provider's decline code for a declined one, in one transaction and
	// conditionally (nothing changes, and changed is false, when it was
	// settled already). When ended is a status that ends a hold, the
	// move's hold, if still authorized, ends with it as EndHold does, with
	// captured minor units taken.
	SettleMove(ctx context.Context, key string, status chargeonce.MoveStatus, declineCode string, ended chargeonce.HoldStatus, captured int64, at time.Time) (changed bool, err error)
	// EndHold ends the attempt's hold, if still authorized, with status
	// (an ended one) and captured minor units taken (0 unless captured),
	// and moves its order by chargeonce.OrderHoldEnded, in one
	// transaction. It changes nothing, and changed is false, when the
	// hold had ended already. ErrNotFound: no such hold.
	EndHold(ctx context.Context, attemptKey string, status chargeonce.HoldStatus, captured int64, at time.Time) (changed bool, err error)
}
