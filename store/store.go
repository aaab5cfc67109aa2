// Package store is the merchant's database: orders, payment attempts, the
// log of every request sent to the provider, refunds and their own request
// logs, the holds of manual captures with their captures and voids and
// their request logs, the late charges that the repair found, and the
// payment timing that the workers publish.
//
// One Store interface has two implementations that share every query and
// rule and differ only in their SQL dialect: PostgreSQL through pgx, for
// deployments that scale out, and SQLite (pure Go) as the embedded default.
// Open picks one from the DSN and brings the schema up to date.
//
// The payment attempt row is the outbox of the checkout: its idempotency key
// is stored before any request goes to the provider. Every status change is a
// conditional update on an open attempt, so a terminal status is never
// overwritten. A refund row is the outbox of a refund in the same way, and
// the refunds of one charge are decided one at a time, under a lock, so that
// those that hold never sum to more than the charge.
package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/internal/apikey"
)

// ErrNotFound is returned when an order or an attempt does not exist, or no
// payment timing was published.
var ErrNotFound = errors.New("store: not found")

// ErrConflict is returned when a new attempt would reuse an idempotency key
// or a merchant reference that already belongs to another attempt.
var ErrConflict = errors.New("store: conflict")

// Order is an order as the merchant sees it.
type Order struct {
	ID          int64
	Amount      chargeonce.Money
	Description string
	Status      chargeonce.OrderStatus
	// ProviderPaymentID is the provider's charge ID once the order is paid
	// (Status.Paid): the charge its refunds return money from; or, once it
	// is authorized, its hold's, which it keeps when the hold ends.
	ProviderPaymentID string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Attempt is one payment attempt: one idempotency key for one order, amount
// and card.
type Attempt struct {
	Key     string
	OrderID int64
	Amount  chargeonce.Money
	// CardHash is chargeonce.CardHasher.Hash of the card token; the token
	// itself is never stored. Until RekeyCardHashes has done the row, it
	// is the legacy hash (chargeonce.LegacyCardHash) and CardHashKeyed is
	// false.
	CardHash          string
	CardHashKeyed     bool
	MerchantReference string
	Status            chargeonce.AttemptStatus
	// ProviderPaymentID is the provider's charge ID, when the attempt settled
	// with one.
	ProviderPaymentID string
	// WorkflowStarted is false until the payment workflow of the attempt is
	// known to run; the outbox sweep starts the ones left behind.
	WorkflowStarted bool
	CreatedAt       time.Time
	// LastCheckedAt is when the provider was last asked about the attempt,
	// nil before the first check.
	LastCheckedAt *time.Time
	// AbandonAt is the deadline after which an attempt with no charge found
	// at the provider is abandoned.
	AbandonAt time.Time
	// Requests is the log of the attempt's exchanges with the provider,
	// oldest first.
	Requests []chargeonce.ProviderRequest
	// Provider names the provider the attempt is sent to
	// (chargeonce.PaymentIntent.Provider); never empty.
	Provider string
	// RoutedBy says why the attempt went to its provider, for people: the
	// routing rule that chose it, or a failover from another provider.
	// Empty for the attempts stored before attempts said.
	RoutedBy string
	// Capture is the attempt's capture mode; never empty.
	Capture chargeonce.CaptureMode
	// OnDeadline is what its hold's deadline does; empty but for a manual
	// capture, whose is never empty.
	OnDeadline chargeonce.DeadlineAction
}

// NewAttempt is what GetOrStartAttempt needs to find or create the attempt of
// a checkout. The amount is the order's.
type NewAttempt struct {
	OrderID int64
	// CardHash is the keyed hash of the card token (chargeonce.CardHasher).
	CardHash string
	// Key is a fresh UUIDv7, used only if a new attempt is created.
	Key string
	// ReferencePrefix starts the merchant reference of a new attempt.
	ReferencePrefix string
	// Now is the creation time of a new attempt.
	Now time.Time
	// AbandonAfter sets the abandon deadline of a new attempt, counted from Now.
	AbandonAfter time.Duration
	// Provider names the provider a new attempt is sent to; it must not be
	// empty.
	Provider string
	// RoutedBy says why a new attempt goes to Provider (Attempt.RoutedBy).
	RoutedBy string
	// Capture is the capture mode of the checkout; empty is automatic. An
	// open attempt is reused only for the same mode and deadline action.
	Capture chargeonce.CaptureMode
	// OnDeadline is what the hold's deadline does, for a manual capture;
	// empty is void.
	OnDeadline chargeonce.DeadlineAction
}

func (n NewAttempt) validate() error {
	switch {
	case n.OrderID <= 0:
		return fmt.Errorf("store: new attempt: order ID %d is not positive", n.OrderID)
	case !validHexSHA256(n.CardHash):
		return fmt.Errorf("store: new attempt: card hash %q is not a lower-case hex SHA-256", n.CardHash)
	case !chargeonce.ValidKey(n.Key):
		return fmt.Errorf("store: new attempt: key %q is not a lower-case UUID", n.Key)
	case !chargeonce.ValidReferencePrefix(n.ReferencePrefix):
		return fmt.Errorf("store: new attempt: reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", n.ReferencePrefix)
	case n.Now.IsZero():
		return errors.New("store: new attempt: creation time is missing")
	case n.AbandonAfter <= 0:
		return fmt.Errorf("store: new attempt: abandon-after %v is not positive", n.AbandonAfter)
	case n.Provider == "":
		return errors.New("store: new attempt: provider name is empty")
	case !n.Capture.Valid():
		return fmt.Errorf("store: new attempt: unknown capture mode %q", n.Capture)
	case !n.OnDeadline.Valid():
		return fmt.Errorf("store: new attempt: unknown deadline action %q", n.OnDeadline)
	case n.OnDeadline != "" && !n.Capture.Manual():
		return fmt.Errorf("store: new attempt: deadline action %q without a manual capture, which alone has a hold", n.OnDeadline)
	}
	return nil
}

// mode is the capture mode and the deadline action that n stores, with
// their defaults filled in: automatic, and void for a manual capture.
func (n NewAttempt) mode() (chargeonce.CaptureMode, chargeonce.DeadlineAction) {
	if !n.Capture.Manual() {
		return chargeonce.CaptureAutomatic, ""
	}
	return chargeonce.CaptureManual, cmp.Or(n.OnDeadline, chargeonce.DeadlineVoid)
}

// validHexSHA256 reports whether h is a SHA-256 in lower-case hex, as card
// hashes and request fingerprints are.
func validHexSHA256(h string) bool { return lowerHex(h, 64) }

// lowerHex reports whether s is n lower-case hex characters.
func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// PublishedTiming is the payment timing that the workers published, which
// every checkout and every outbox sweep start uses.
type PublishedTiming struct {
	// Timing is the timing as the workflows encode it (JSON). The store
	// keeps it as given and never reads it, since what a timing means is the
	// workflows' business.
	Timing []byte
	// PublishedAt is when it was stored.
	PublishedAt time.Time
}

// Settlement is what SettleAttempt did, and where it left the attempt's
// order.
type Settlement struct {
	// Changed is false when the attempt was already terminal, so that
	// nothing was written.
	Changed bool
	// OrderPaidBy is the provider payment ID of the charge that paid the
	// attempt's order, refunded or not, as the transaction left the order;
	// empty while the order is not paid.
	OrderPaidBy string
}

// Decision says what GetOrStartAttempt did with a checkout.
type Decision string

// The decisions of GetOrStartAttempt.
const (
	// DecisionCreated: a new attempt was stored and the order is payment_pending.
	DecisionCreated Decision = "created"
	// DecisionReused: an open attempt with the same amount, card, capture
	// mode and deadline action exists; its key is to be sent again.
	DecisionReused Decision = "reused"
	// DecisionAlreadyPaid: the order is no longer open to payment (see
	// chargeonce.OrderStatus.Open): paid, refunded or not, or authorized,
	// its hold captured, voided or expired since. The attempt returned is
	// the one whose charge paid it or whose hold it authorized: the one
	// that succeeded, or the one whose late charge the order adopted.
	DecisionAlreadyPaid Decision = "already_paid"
	// DecisionConflict: an open attempt with another card, amount, capture
	// mode or deadline action exists and must settle first; it is the
	// attempt returned.
	DecisionConflict Decision = "conflict"
	// DecisionNeedsReview: a failed attempt may have charged the card, so no
	// new attempt is allowed until a human looks; it is the attempt returned.
	DecisionNeedsReview Decision = "needs_review"
)

// Store is the merchant's database. Every method is safe for concurrent use,
// also from several processes sharing one database.
type Store interface {
	// CreateOrder stores a new order in status placed.
	CreateOrder(ctx context.Context, amount chargeonce.Money, description string) (Order, error)
	// GetOrder returns the order and its attempts, oldest first, each with
	// its Requests.
	GetOrder(ctx context.Context, id int64) (Order, []Attempt, error)
	// Order returns the order alone, one row, for a caller that needs no
	// attempt, such as a checkout that routes the order by its amount.
	Order(ctx context.Context, id int64) (Order, error)
	// GetOrStartAttempt decides, in one transaction that locks the order,
	// what a checkout does: an order no longer open to payment (paid,
	// refunded or not, or authorized, whatever became of its hold) is
	// already_paid, with the attempt whose charge paid it or whose hold it
	// authorized (the zero Attempt when it was paid by hand); an open
	// attempt with the same amount, card hash, capture mode and deadline
	// action is reused; an open attempt that differs in any is a conflict; a
	// failed attempt and no open one needs review; otherwise a new attempt
	// with the given key is inserted, the order becomes payment_pending,
	// and the decision is created.
	// Concurrent calls for one order never create two open attempts. It
	// returns the order as the transaction leaves it, and the attempt,
	// which carries no Requests.
	GetOrStartAttempt(ctx context.Context, n NewAttempt) (Order, Attempt, Decision, error)
	// MarkWorkflowStarted records that the attempt's workflow runs, which
	// takes it out of the outbox.
	MarkWorkflowStarted(ctx context.Context, key string) error
	// UnstartedAttempts is the outbox: open attempts created before
	// createdBefore whose workflow is not known to run, oldest first, at
	// most limit of them. Their Requests are not loaded.
	UnstartedAttempts(ctx context.Context, createdBefore time.Time, limit int) ([]Attempt, error)
	// GetAttempt returns one attempt with its Requests.
	GetAttempt(ctx context.Context, key string) (Attempt, error)
	// Requests returns the request log of op's intents: the attempts' for
	// a charge, the refunds' for a refund, the hold moves' for a capture or
	// a void.
	Requests(op chargeonce.Operation) (RequestLog, error)
	// MarkChecked records when the provider was last asked about the attempt.
	MarkChecked(ctx context.Context, key string, at time.Time) error
	// SettleAttempt moves an open attempt to a terminal status and its order
	// to chargeonce.OrderStatusAfter(status), with the provider payment ID,
	// in one transaction and conditionally (WHERE status = 'open'). It
	// changes nothing when the attempt was already terminal (Changed is
	// false). The order changes only while it is payment_pending, so a
	// paid order, refunded or not, is never un-paid. A manual capture's
	// attempt succeeds only by HoldStore.SettleAuthorization: a success
	// here is refused. Either way it tells which charge the order is paid
	// by, so that a caller learns whether a succeeded charge paid its order
	// without reading it.
	SettleAttempt(ctx context.Context, key string, status chargeonce.AttemptStatus, providerPaymentID string, at time.Time) (Settlement, error)
	// OpenAttemptStats returns how many attempts are open and when the
	// oldest of them was created (the zero time when none is open).
	OpenAttemptStats(ctx context.Context) (open int, oldestCreated time.Time, err error)
	// PublishTiming stores timing, which must be JSON, as the payment timing
	// when none is stored yet, or when replace is true, and returns the
	// timing stored once it returns. It is atomic: of several processes
	// publishing at once, one stores its timing first and the others get
	// that one back (or replace it, in turn, when replace is true).
	PublishTiming(ctx context.Context, timing []byte, replace bool) (PublishedTiming, error)
	// PaymentTiming returns the published payment timing, or ErrNotFound
	// when none was ever published. It reads one row by its primary key, so
	// that callers may read it for every checkout instead of caching it.
	PaymentTiming(ctx context.Context) (PublishedTiming, error)
	// PublishProviders replaces the names of the providers that the
	// workers reach with names, in one transaction: the set is the one of
	// the worker that published last.
	PublishProviders(ctx context.Context, names []string) error
	// WorkerProviders returns the names that the workers published, in
	// order, or ErrNotFound when no worker has published any.
	WorkerProviders(ctx context.Context) ([]string, error)
	// SettlementStore keeps the daily settlement.
	SettlementStore
	// RefundStore keeps the refunds.
	RefundStore
	// HoldStore keeps the holds of manual captures, their captures and
	// their voids.
	HoldStore
	// EventStore keeps the merchant's endpoints and the event outbox.
	EventStore
	// ConsoleStore keeps the operator console's sessions, the audit log
	// and the resolutions of settlement exceptions.
	ConsoleStore
	// Store keeps the checkout API's keys.
	apikey.Store
	// AttemptByReference returns the attempt with this merchant reference,
	// with its Requests, or ErrNotFound.
	AttemptByReference(ctx context.Context, merchantReference string) (Attempt, error)
	// RecordProviderEvent stores e unless an event with its ID is stored
	// already, and returns the event stored under that ID and whether this
	// call created it. A duplicate changes nothing, whatever it holds.
	RecordProviderEvent(ctx context.Context, e ProviderEvent) (stored ProviderEvent, created bool, err error)
	// MarkProviderEventHandled records what handling the event with this
	// ID did. The first result recorded is kept.
	MarkProviderEventHandled(ctx context.Context, id, result string, at time.Time) error
	// ProviderEvents returns the events for a merchant reference, oldest
	// first.
	ProviderEvents(ctx context.Context, merchantReference string) ([]ProviderEvent, error)
	// RekeyCardHashes replaces every legacy card hash with rekey(hash) and
	// marks its row done, in batches, and returns how many rows it changed.
	// A row is done once, however often and by however many processes it
	// runs. Every process runs it at start (backend.Connect), before it
	// serves: the hash of a new checkout is keyed and must compare equal to
	// the stored one.
	RekeyCardHashes(ctx context.Context, rekey func(legacy string) (string, error)) (int, error)
	// Close releases the database connections.
	Close() error
}

// Open connects to the database named by dsn and applies any missing schema
// migrations:
//   - "postgres://..." or "postgresql://..." opens PostgreSQL (a pgx
//     connection string);
//   - "sqlite:PATH" opens or creates the SQLite file at PATH, and
//     "sqlite::memory:" a private in-memory database.
func Open(ctx context.Context, dsn string) (Store, error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn)
	case strings.HasPrefix(dsn, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	}
	// Only the scheme is quoted: the rest of a DSN may hold a password.
	if scheme, _, found := strings.Cut(dsn, ":"); found {
		return nil, fmt.Errorf("store: unknown database scheme %q: the DSN must start with postgres://, postgresql:// or sqlite:PATH", scheme)
	}
	return nil, errors.New("store: the DSN must start with postgres://, postgresql:// or sqlite:PATH")
}
