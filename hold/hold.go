// Package hold is the service of the holds that manual captures leave on
// cards: it turns "capture this order's hold" (all of it, or part) and
// "void this order's hold" into exactly one move of the hold, and drives
// that move's workflow, as package refund does for refunds.
//
// A move request is decided in one database transaction that locks the
// order (store.StartMove): the API request's own Idempotency-Key replays
// the move it created, and the hold must still be authorized with no other
// move pending, so that a hold is captured or voided once. The new move's
// own key is stored before anything is sent; only then is Temporal asked,
// with Update-With-Start, to run the move's workflow (CaptureWorkflow or
// VoidWorkflow) whose ID is that key. The move row doubles as an outbox:
// Sweep starts the workflow of any move whose start was lost. A move goes
// to the provider that holds the hold, which the store records with it.
//
// Moves run under the payment timing the workers published (see package
// checkout).
package hold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/store"
	"chargeonce/workflows"
)

// The errors of Move are the store's (store.ErrNotFound, store.ErrNotHeld,
// store.ErrHoldMoving, store.ErrCaptureExceedsHold), the timing's
// (checkout.ErrNoTiming, checkout.ErrTimingUnreadable) and the
// Idempotency-Key's (checkout.ErrKeyReused, and checkout.ErrInProgress as
// a *checkout.InProgressError), which refunds share; a capture amount that
// cannot be read is a *checkout.AmountError. They are matched with
// errors.Is and errors.As.

// Config configures a Service.
type Config struct {
	// Store is the merchant database. Required.
	Store store.Store
	// Temporal is the client that starts and updates the moves'
	// workflows. Required.
	Temporal client.Client
	// Budget is how long a move request waits for the send phase before it
	// answers pending. Zero means checkout.DefaultBudget of the published
	// timing, read at each request.
	Budget time.Duration
	// ReferencePrefix starts every merchant reference; empty means
	// checkout.DefaultReferencePrefix.
	ReferencePrefix string
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// NewKey issues move keys; nil means checkout.NewKey.
	NewKey func() (string, error)
	// Logger receives the story of every move; nil discards.
	Logger *slog.Logger
}

// Service runs capture and void requests and the moves' outbox sweep. It
// is safe for concurrent use.
type Service struct {
	store    store.Store
	temporal client.Client
	budget   time.Duration
	prefix   string
	now      func() time.Time
	newKey   func() (string, error)
	log      *slog.Logger
	// updates joins the requests of one move key in this process, as
	// checkout joins its charges.
	updates singleflight.Group
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("hold: config: Store is required")
	}
	if cfg.Temporal == nil {
		return nil, errors.New("hold: config: Temporal client is required")
	}
	if cfg.Budget < 0 {
		return nil, fmt.Errorf("hold: config: budget %v is negative; use zero for the default", cfg.Budget)
	}
	if cfg.ReferencePrefix == "" {
		cfg.ReferencePrefix = checkout.DefaultReferencePrefix
	}
	if !chargeonce.ValidReferencePrefix(cfg.ReferencePrefix) {
		return nil, fmt.Errorf("hold: config: reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", cfg.ReferencePrefix)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewKey == nil {
		cfg.NewKey = checkout.NewKey
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{
		store: cfg.Store, temporal: cfg.Temporal, budget: cfg.Budget, prefix: cfg.ReferencePrefix,
		now: cfg.Now, newKey: cfg.NewKey, log: cfg.Logger,
	}, nil
}

// Request is one capture or void request of the API.
type Request struct {
	// Kind is capture or void.
	Kind chargeonce.MoveKind
	// OrderID is the order whose hold moves.
	OrderID int64
	// Amount is a capture's decimal amount as sent, in the hold's
	// currency; nil captures all of the hold. A void has none.
	Amount *string
	// RequestKey is the request's Idempotency-Key.
	RequestKey string
}

// Fingerprint identifies the request's body, for its Idempotency-Key: the
// SHA-256 of the kind, the order, and the amount as sent ("all" when none
// was), so that one key never asks for a capture and a void, or for two
// orders.
func (r Request) Fingerprint() string {
	amount := "all"
	if r.Amount != nil {
		amount = "amount:" + *r.Amount
	}
	sum := sha256.Sum256([]byte(string(r.Kind) + "\x00order:" + strconv.FormatInt(r.OrderID, 10) + "\x00" + amount))
	return hex.EncodeToString(sum[:])
}

// Result is the answer of a capture or void request.
type Result struct {
	// Move is the move as the answer leaves it: its status is the
	// workflow's answer even where the database has not recorded it yet.
	Move store.Move
	// Replayed reports that the request's Idempotency-Key had asked for
	// this move before, so nothing new was sent.
	Replayed bool
}

// Move captures or voids the order's hold as req asks, at most once
// however often it is sent with the same Idempotency-Key.
//
// A new move is stored, pending, then its workflow is asked to send it
// and Move waits at most the budget for the answer: succeeded, declined
// (the hold had ended at the provider), failed or not_processed, or
// pending while the outcome is unknown. A request whose key asked before
// answers that move as it stands now (Replayed), unless the first request
// is still within its budget (checkout.ErrInProgress) or had another body
// (checkout.ErrKeyReused).
func (s *Service) Move(ctx context.Context, req Request) (Result, error) {
	switch {
	case !req.Kind.Valid():
		return Result{}, fmt.Errorf("hold: unknown move kind %q", req.Kind)
	case req.Kind == chargeonce.MoveVoid && req.Amount != nil:
		return Result{}, errors.New("hold: a void releases the whole hold and takes no amount")
	case req.OrderID <= 0:
		return Result{}, fmt.Errorf("hold: order ID %d is not positive", req.OrderID)
	case req.RequestKey == "":
		return Result{}, errors.New("hold: the Idempotency-Key is empty")
	}
	timing, err := checkout.ReadTiming(ctx, s.store)
	if err != nil {
		return Result{}, err
	}
	amount, err := s.amount(ctx, req)
	if err != nil {
		return Result{}, err
	}
	key, err := s.newKey()
	if err != nil {
		return Result{}, fmt.Errorf("hold: issue idempotency key: %w", err)
	}
	m, decision, err := s.store.StartMove(ctx, store.NewMove{
		OrderID: req.OrderID, Kind: req.Kind, Amount: amount, Origin: chargeonce.MoveByMerchant,
		Key: key, ReferencePrefix: s.prefix, RequestKey: req.RequestKey, RequestFingerprint: req.Fingerprint(), Now: s.now(),
	})
	if err != nil {
		return Result{}, fmt.Errorf("hold: %s of order %d: %w", req.Kind, req.OrderID, err)
	}
	log := s.log.With("move", m.Key, "kind", m.Kind, "order", m.OrderID, "request_key", req.RequestKey)
	switch decision {
	case store.MoveKeyReused:
		log.Warn("move request refused: its Idempotency-Key asked for another move before")
		return Result{}, fmt.Errorf("%w: %s %s", checkout.ErrKeyReused, m.Kind, m.Key)
	case store.MoveReplayed:
		if err := checkout.CheckReplay(m.CreatedAt, m.Status == chargeonce.MovePending, s.budgetFor(timing), s.now()); err != nil {
			log.Info("move request refused: the first request with its Idempotency-Key is still in progress")
			return Result{}, err
		}
		log.Info("move request replayed", "status", m.Status)
		return Result{Move: m, Replayed: true}, nil
	case store.MoveCreated:
		log.Info("new move stored", "reference", m.MerchantReference, "amount", m.Amount.String(), "provider", m.Provider)
	default:
		return Result{}, fmt.Errorf("hold: unknown store decision %q", decision)
	}
	return s.send(ctx, log, timing, m)
}

// amount reads a capture's amount in minor units of the hold's currency;
// 0 means all of it.
func (s *Service) amount(ctx context.Context, req Request) (int64, error) {
	if req.Amount == nil {
		return 0, nil
	}
	h, err := s.store.OrderHold(ctx, req.OrderID)
	if errors.Is(err, store.ErrNotFound) {
		// An order without a hold (or no order at all, which StartMove
		// tells apart) is refused by StartMove, amount or none.
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("hold: order %d: %w", req.OrderID, err)
	}
	m, err := chargeonce.ParseMoney(*req.Amount, h.Amount.Currency)
	if err != nil {
		return 0, &checkout.AmountError{Err: err}
	}
	if m.Minor <= 0 {
		// The store reads 0 as "all of it", which an explicit zero must
		// never become.
		return 0, &checkout.AmountError{Err: fmt.Errorf("%q is not positive: a capture takes some money, or omit the amount to capture the whole hold", *req.Amount)}
	}
	return m.Minor, nil
}

// budgetFor is how long a move request under timing t waits for its send
// phase.
func (s *Service) budgetFor(t workflows.Timing) time.Duration {
	if s.budget > 0 {
		return s.budget
	}
	return checkout.DefaultBudget(t)
}

// send asks the move's workflow to send it, joined with every other
// request of the same move in this process, and answers within the
// budget. The joined update runs detached from the caller's context, as in
// checkout, so that one client going away does not cut the answer short.
func (s *Service) send(ctx context.Context, log *slog.Logger, timing workflows.Timing, m store.Move) (Result, error) {
	return checkout.Join(ctx, &s.updates, log, m.Key,
		func(ctx context.Context) (Result, error) { return s.update(ctx, log, timing, m) },
		func(ctx context.Context) (Result, error) { return s.result(ctx, m.Key, nil) })
}

// update runs Update-With-Start of the move's workflow and turns its
// answer, or the lack of one, into a Result. Only a move still pending
// must be kept from the sweep.
func (s *Service) update(ctx context.Context, log *slog.Logger, timing workflows.Timing, m store.Move) (Result, error) {
	start := s.temporal.NewWithStartWorkflowOperation(startOptions(m.MoveIntent), workflows.MoveWorkflow(m.Kind),
		workflows.MoveInput{Intent: m.MoveIntent, Timing: timing})
	answer := checkout.Drive(ctx, s.temporal, log, s.budgetFor(timing), start, client.UpdateWorkflowOptions{
		UpdateName: chargeonce.UpdateMove,
		Args:       []any{workflows.MoveUpdate{Key: m.Key}},
	}, func(a workflows.MoveResult) bool { return a.Status.Settled() }, s.marker(m.Key))
	return s.result(ctx, m.Key, answer)
}

// result reads the move as the database holds it, with the workflow's
// answer over it where the database has not recorded that answer yet.
func (s *Service) result(ctx context.Context, key string, answer *workflows.MoveResult) (Result, error) {
	m, err := checkout.ReadAnswered(ctx, func(ctx context.Context) (store.Move, error) { return s.store.GetMove(ctx, key) }, answer,
		func(m *store.Move, a workflows.MoveResult) {
			if a.Status.Valid() && m.Status == chargeonce.MovePending {
				m.Status = a.Status
				if m.DeclineCode == "" {
					m.DeclineCode = a.DeclineCode
				}
			}
		})
	if err != nil {
		return Result{}, fmt.Errorf("hold: move %s: %w", key, err)
	}
	return Result{Move: m}, nil
}

// marker records that the workflow of the move with this key runs
// (checkout.Drive, checkout.StartOutbox).
func (s *Service) marker(key string) func(context.Context) error {
	return func(ctx context.Context) error { return s.store.MarkMoveWorkflowStarted(ctx, key) }
}

// startOptions are the options of every start of a move's workflow
// (checkout.StartOptions).
func startOptions(intent chargeonce.MoveIntent) client.StartWorkflowOptions {
	return checkout.StartOptions(workflows.MoveWorkflowID(intent.Key), workflows.MoveStartSearchAttributes(intent))
}
