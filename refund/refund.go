// Package refund is the refund service: it turns "give back this much of
// this order's payment" into exactly one refund intent and drives that
// intent's refund workflow, as package checkout does for charges.
//
// A refund request is decided in one database transaction that locks the
// order (store.StartRefund): the API request's own Idempotency-Key replays
// the refund it created, and the amount is checked against what the charge
// can still refund, so that concurrent refunds never pass the charge
// together. The new refund's own key is stored before anything is sent;
// only then is Temporal asked, with Update-With-Start, to run the refund
// workflow whose ID is that key and to send the refund. The refund row
// doubles as an outbox: Sweep starts the workflow of any refund whose start
// was lost, which is also how the repair's refunds of late charges start
// when the process that stored them could not start them itself.
//
// Refunds run under the payment timing the workers published (see package
// checkout): the same retries, budget, lookup pacing and key retention.
package refund

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Errors of Refund besides the store's (store.ErrNotFound,
// store.ErrNotRefundable, store.ErrRefundExceedsCharge), the timing's
// (checkout.ErrNoTiming, checkout.ErrTimingUnreadable) and the
// Idempotency-Key's (checkout.ErrKeyReused, and checkout.ErrInProgress as a
// *checkout.InProgressError), which every request with the API's own
// Idempotency-Key shares. A bad amount is a *checkout.AmountError. They are
// matched with errors.Is and errors.As.

// Config configures a Service.
type Config struct {
	// Store is the merchant database. Required.
	Store store.Store
	// Temporal is the client that starts and updates refund workflows.
	// Required.
	Temporal client.Client
	// Finders verify at each provider, by its name, what its events
	// claim: late charges (RepairLateCharge) and refunds that failed after
	// they succeeded (HandleRefundEvent). An attempt or refund is looked up
	// at the provider the books hold it under; a provider without a finder
	// here leaves both to the settlement, with a warning.
	Finders map[string]Finder
	// Budget is how long a refund request waits for the send phase before
	// it answers pending. Zero means checkout.DefaultBudget of the
	// published timing, read at each request.
	Budget time.Duration
	// ReferencePrefix starts every merchant reference; empty means
	// checkout.DefaultReferencePrefix.
	ReferencePrefix string
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// NewKey issues refund keys; nil means checkout.NewKey.
	NewKey func() (string, error)
	// Logger receives the story of every refund, and its alerts; nil
	// discards.
	Logger *slog.Logger
}

// Finder looks charges and refunds up at the provider: the part of
// provider.Port that verifying the provider's events needs.
type Finder interface {
	FindCharges(ctx context.Context, merchantReference string) ([]provider.Charge, error)
	FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]provider.Refund, error)
}

// Service runs refund requests, the refunds' outbox sweep, the provider's
// refund events and the repair of late charges. It is safe for concurrent
// use.
type Service struct {
	store    store.Store
	temporal client.Client
	finders  map[string]Finder
	budget   time.Duration
	prefix   string
	now      func() time.Time
	newKey   func() (string, error)
	log      *slog.Logger
	// updates joins the requests of one refund key in this process, as
	// checkout joins its charges.
	updates singleflight.Group
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("refund: config: Store is required")
	}
	if cfg.Temporal == nil {
		return nil, errors.New("refund: config: Temporal client is required")
	}
	if cfg.Budget < 0 {
		return nil, fmt.Errorf("refund: config: budget %v is negative; use zero for the default", cfg.Budget)
	}
	if cfg.ReferencePrefix == "" {
		cfg.ReferencePrefix = checkout.DefaultReferencePrefix
	}
	if !chargeonce.ValidReferencePrefix(cfg.ReferencePrefix) {
		return nil, fmt.Errorf("refund: config: reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", cfg.ReferencePrefix)
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
		store: cfg.Store, temporal: cfg.Temporal, finders: maps.Clone(cfg.Finders), budget: cfg.Budget,
		prefix: cfg.ReferencePrefix, now: cfg.Now, newKey: cfg.NewKey, log: cfg.Logger,
	}, nil
}

// Request is one refund request of the API.
type Request struct {
	// OrderID is the order whose paying charge to refund; 0 with ChargeID.
	OrderID int64
	// ChargeID is the charge to refund, for an operator; empty with
	// OrderID.
	ChargeID string
	// Amount is the decimal amount as sent, in the charge's currency; nil
	// means all that the charge can still refund.
	Amount *string
	// Reason says why.
	Reason string
	// RequestKey is the request's Idempotency-Key.
	RequestKey string
}

// Fingerprint identifies the request's body, for its Idempotency-Key: the
// SHA-256 of what is refunded (the order or the charge), the amount as sent
// ("rest" when none was), and the reason.
func (r Request) Fingerprint() string {
	target := "order:" + strconv.FormatInt(r.OrderID, 10)
	if r.ChargeID != "" {
		target = "charge:" + r.ChargeID
	}
	amount := "rest"
	if r.Amount != nil {
		amount = "amount:" + *r.Amount
	}
	sum := sha256.Sum256([]byte(target + "\x00" + amount + "\x00" + r.Reason))
	return hex.EncodeToString(sum[:])
}

// Result is the answer of a refund request.
type Result struct {
	// Refund is the refund as the answer leaves it: its status is the
	// workflow's answer even where the database has not recorded it yet.
	Refund store.Refund
	// Replayed reports that the request's Idempotency-Key had asked for
	// this refund before, so nothing new was sent.
	Replayed bool
}

// Refund refunds what req asks, at most once however often it is sent
// with the same Idempotency-Key.
//
// A new refund is stored, pending, then its workflow is asked to send it
// and Refund waits at most the budget for the answer: succeeded, failed or
// not_processed, or pending while the outcome is unknown. A request whose
// key asked before answers that refund as it stands now (Replayed), unless
// the first request is still within its budget (checkout.ErrInProgress) or
// had another body (checkout.ErrKeyReused).
func (s *Service) Refund(ctx context.Context, req Request) (Result, error) {
	if (req.OrderID == 0) == (req.ChargeID == "") {
		return Result{}, errors.New("refund: exactly one of an order and a charge is refunded")
	}
	if req.RequestKey == "" {
		return Result{}, errors.New("refund: the Idempotency-Key is empty")
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
		return Result{}, fmt.Errorf("refund: issue idempotency key: %w", err)
	}
	origin := chargeonce.RefundByMerchant
	if req.ChargeID != "" {
		origin = chargeonce.RefundByOperator
	}
	r, decision, err := s.store.StartRefund(ctx, store.NewRefund{
		OrderID: req.OrderID, ChargeID: req.ChargeID, Amount: amount, Reason: req.Reason, Origin: origin,
		Key: key, ReferencePrefix: s.prefix, RequestKey: req.RequestKey, RequestFingerprint: req.Fingerprint(), Now: s.now(),
	})
	if err != nil {
		return Result{}, fmt.Errorf("refund: %w", err)
	}
	log := s.log.With("refund", r.Key, "order", r.OrderID, "charge", r.ChargeID, "request_key", req.RequestKey)
	switch decision {
	case store.RefundKeyReused:
		log.Warn("refund request refused: its Idempotency-Key asked for another refund before")
		return Result{}, fmt.Errorf("%w: refund %s", checkout.ErrKeyReused, r.Key)
	case store.RefundReplayed:
		if err := checkout.CheckReplay(r.CreatedAt, r.Status == chargeonce.RefundPending, s.budgetFor(timing), s.now()); err != nil {
			log.Info("refund request refused: the first request with its Idempotency-Key is still in progress")
			return Result{}, err
		}
		log.Info("refund request replayed", "status", r.Status)
		return Result{Refund: r, Replayed: true}, nil
	case store.RefundCreated:
		log.Info("new refund stored", "reference", r.MerchantReference, "amount", r.Amount.String())
	default:
		return Result{}, fmt.Errorf("refund: unknown store decision %q", decision)
	}
	return s.send(ctx, log, timing, r)
}

// amount reads the request's amount in minor units of the charge's
// currency; 0 means the rest.
func (s *Service) amount(ctx context.Context, req Request) (int64, error) {
	if req.Amount == nil {
		return 0, nil
	}
	var currency string
	if req.OrderID != 0 {
		order, _, err := s.store.GetOrder(ctx, req.OrderID)
		if err != nil {
			return 0, fmt.Errorf("refund: order %d: %w", req.OrderID, err)
		}
		currency = order.Amount.Currency
	} else {
		charge, err := s.store.RefundableCharge(ctx, req.ChargeID)
		if err != nil {
			return 0, fmt.Errorf("refund: charge %s: %w", req.ChargeID, err)
		}
		currency = charge.Amount.Currency
	}
	m, err := chargeonce.ParseMoney(*req.Amount, currency)
	if err != nil {
		return 0, &checkout.AmountError{Err: err}
	}
	return m.Minor, nil
}

// budgetFor is how long a refund request under timing t waits for its send
// phase.
func (s *Service) budgetFor(t workflows.Timing) time.Duration {
	if s.budget > 0 {
		return s.budget
	}
	return checkout.DefaultBudget(t)
}

// send asks the refund's workflow to send it, joined with every other
// request of the same refund in this process, and answers within the
// budget. The joined update runs detached from the caller's context, as in
// checkout, so that one client going away does not cut the answer short.
func (s *Service) send(ctx context.Context, log *slog.Logger, timing workflows.Timing, r store.Refund) (Result, error) {
	return checkout.Join(ctx, &s.updates, log, r.Key,
		func(ctx context.Context) (Result, error) { return s.update(ctx, log, timing, r) },
		func(ctx context.Context) (Result, error) { return s.result(ctx, r.Key, nil) })
}

// update runs Update-With-Start of the refund's workflow and turns its
// answer, or the lack of one, into a Result. Only a refund still pending
// must be kept from the sweep.
func (s *Service) update(ctx context.Context, log *slog.Logger, timing workflows.Timing, r store.Refund) (Result, error) {
	start := s.temporal.NewWithStartWorkflowOperation(startOptions(r.RefundIntent), workflows.RefundWorkflow,
		workflows.RefundInput{Intent: r.RefundIntent, Timing: timing})
	answer := checkout.Drive(ctx, s.temporal, log, s.budgetFor(timing), start, client.UpdateWorkflowOptions{
		UpdateName: chargeonce.UpdateRefund,
		Args:       []any{workflows.RefundUpdate{Key: r.Key}},
	}, func(a workflows.RefundResult) bool { return a.Status.Settled() }, s.marker(r.Key))
	return s.result(ctx, r.Key, answer)
}

// result reads the refund as the database holds it, with the workflow's
// answer over it where the database has not recorded that answer yet.
func (s *Service) result(ctx context.Context, key string, answer *workflows.RefundResult) (Result, error) {
	r, err := checkout.ReadAnswered(ctx, func(ctx context.Context) (store.Refund, error) { return s.store.GetRefund(ctx, key) }, answer,
		func(r *store.Refund, a workflows.RefundResult) {
			if a.Status.Valid() && r.Status == chargeonce.RefundPending {
				r.Status = a.Status
				if r.ProviderRefundID == "" {
					r.ProviderRefundID = a.ProviderRefundID
				}
				if r.FailureReason == "" {
					r.FailureReason = a.FailureReason
				}
			}
		})
	if err != nil {
		return Result{}, fmt.Errorf("refund %s: %w", key, err)
	}
	return Result{Refund: r}, nil
}

// marker records that the workflow of the refund with this key runs
// (checkout.Drive, checkout.StartOutbox).
func (s *Service) marker(key string) func(context.Context) error {
	return func(ctx context.Context) error { return s.store.MarkRefundWorkflowStarted(ctx, key) }
}

// startOptions are the options of every start of a refund workflow
// (checkout.StartOptions).
func startOptions(intent chargeonce.RefundIntent) client.StartWorkflowOptions {
	return checkout.StartOptions(workflows.RefundWorkflowID(intent.Key), workflows.RefundStartSearchAttributes(intent))
}

// start starts the refund's workflow without waiting for its send phase,
// and records that it runs. A workflow that runs or ran counts as started.
func (s *Service) start(ctx context.Context, timing workflows.Timing, r store.Refund) error {
	if err := checkout.StartOutbox(ctx, s.temporal, startOptions(r.RefundIntent), workflows.RefundWorkflow,
		workflows.RefundInput{Intent: r.RefundIntent, Timing: timing}, s.marker(r.Key)); err != nil {
		return fmt.Errorf("refund %s: %w", r.Key, err)
	}
	return nil
}
