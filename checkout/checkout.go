// Package checkout is the checkout service: it turns "pay this order with
// this card" into exactly one payment attempt and drives that attempt's
// payment workflow.
//
// A checkout first decides, in one database transaction, which attempt it
// belongs to, and stores a new attempt's idempotency key before anything is
// sent. Only then does it ask Temporal, with Update-With-Start, to run the
// payment workflow whose ID is that key and to charge the card. Because the
// workflow ID is the key, a retry of the same checkout joins the same
// workflow instead of charging again. The attempt row doubles as an outbox:
// Sweep starts the workflow of any attempt whose start was lost.
//
// The payment timing is not configured here. The workers own it: a worker
// checks its abandon deadline against the provider's key retention and
// publishes its timing in the merchant database (see package worker). Every
// checkout and every sweep reads it there, uncached, and uses it for the new
// attempt's deadline and for the workflow's input. A timing of the API's own
// would make that safety check test a value the workflows never run with.
package checkout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/provider/routing"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Errors of Checkout. Each names a situation the caller answers in its own
// way; they are matched with errors.Is.
var (
	// ErrNotFound: the order does not exist.
	ErrNotFound = fmt.Errorf("checkout: order not found: %w", store.ErrNotFound)
	// ErrConflict: an open attempt with another card or amount may still
	// charge, so a new one cannot start until it settles.
	ErrConflict = errors.New("checkout: a previous payment for this order is still being verified")
	// ErrNeedsReview: a failed attempt may have charged the card, and only a
	// human may offer the order for payment again.
	ErrNeedsReview = errors.New("checkout: a previous payment for this order failed and needs review")
	// ErrNoTiming: no payment worker has ever started against this database,
	// so there is no published timing to give a new attempt. Nothing was
	// stored or charged; the checkout may be tried again once a worker runs.
	ErrNoTiming = errors.New("checkout: no payment worker has published its timing in the merchant database yet; nothing was charged")
	// ErrTimingUnreadable: the published timing cannot be used by this
	// program, such as one in a newer format published by a newer worker.
	// Nothing was stored or charged; an operator must upgrade the API (the
	// error's text says why).
	ErrTimingUnreadable = errors.New("checkout: the published payment timing cannot be used; nothing was charged")
)

// Outcome is the answer of a checkout.
type Outcome string

// The outcomes of Checkout.
const (
	// OutcomePaid: the order is paid, by this checkout or an earlier one.
	OutcomePaid Outcome = "paid"
	// OutcomeAuthorized: the provider authorized the order's amount on
	// the card, for a manual capture (Capture), now or by an earlier
	// checkout; the order is authorized and waits for a capture or a void.
	// Like paid, it is a success, and nothing more is charged.
	OutcomeAuthorized Outcome = "authorized"
	// OutcomeDeclined: the card was declined; the order may be paid with
	// another card.
	OutcomeDeclined Outcome = "declined"
	// OutcomePending: the outcome is not known within the budget. The
	// attempt stays open; its workflow, or a retry with the same card,
	// settles it. The customer must not pay again.
	OutcomePending Outcome = "pending"
	// OutcomeFailed: the provider refused our request as a contract
	// violation, which is a bug on our side.
	OutcomeFailed Outcome = "failed"
	// OutcomeNotProcessed: the provider processed none of the attempt's
	// requests, say because it was down and the circuit breaker open, so
	// nothing was charged. The attempt is settled and the order placed
	// again: the customer's next checkout, with any card, starts a new
	// attempt under a new key.
	OutcomeNotProcessed Outcome = "not_processed"
)

// Result is the answer of a checkout, with the order and the attempt as the
// outcome leaves them: their statuses and charge ids are those the database
// holds once the answer is known, their times those the checkout read.
type Result struct {
	Outcome Outcome
	// Order is the order; its Status is the one the outcome leaves it in,
	// chargeonce.OrderStatusAfter the attempt's (authorized for the hold of
	// a manual capture), even where the database has not recorded the
	// workflow's answer.
	Order store.Order
	// Attempt is the attempt that this checkout created or reused, or, for
	// an order that was already paid, the attempt that paid it.
	Attempt store.Attempt
	// DeclineCode is the provider's reason on OutcomeDeclined.
	DeclineCode string
	// ProviderTrouble reports, on OutcomeDeclined, that the decline was
	// the provider's own trouble rather than the card's
	// (provider.Result.ProviderTrouble): nothing was charged, and another
	// provider may take the payment.
	ProviderTrouble bool
	// AlreadyPaid reports that the order was paid before this checkout, so
	// nothing was sent.
	AlreadyPaid bool
}

// DefaultReferencePrefix starts merchant references when Config.ReferencePrefix is empty.
const DefaultReferencePrefix = "chargeonce"

// budgetMargin is how much longer than the published charge budget a
// request waits by default, so that a charge phase that used its whole
// budget still reports its result instead of being cut off.
const budgetMargin = 2 * time.Second

// Config configures a Service.
type Config struct {
	// Store is the merchant database. Required.
	Store store.Store
	// Temporal is the client that starts and updates payment workflows. Required.
	Temporal client.Client
	// CardHasher computes the keyed card hashes the database keeps.
	// Required.
	CardHasher chargeonce.CardHasher
	// Budget is how long Checkout waits for the charge phase before it
	// answers pending. Zero means the published charge budget plus two
	// seconds, as read at each checkout.
	Budget time.Duration
	// Routing chooses the providers that a new attempt may go to, in the
	// order they are tried; nil sends every attempt to
	// chargeonce.DefaultProvider.
	Routing *routing.Table
	// Health configures the breakers by which new attempts skip a provider
	// that keeps refusing them (provider.Health); the zero value takes the
	// workers' defaults.
	Health provider.BreakerConfig
	// ReferencePrefix starts every merchant reference; empty means
	// DefaultReferencePrefix.
	ReferencePrefix string
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// NewKey issues idempotency keys; nil means UUIDv7.
	NewKey func() (string, error)
	// Logger receives the story of every checkout; nil discards.
	Logger *slog.Logger
	// Capture is the merchant's capture mode, for the checkouts that do
	// not choose one (Capture.Mode empty); empty means automatic.
	Capture chargeonce.CaptureMode
	// Refunds handles the provider's refund events and repairs late
	// charges (HandleProviderEvent); nil keeps both for the books alone.
	Refunds Refunds
	// Registerer takes the checkout's metrics; nil keeps them unexported.
	Registerer prometheus.Registerer
}

// Service runs checkouts and the outbox sweep. It is safe for concurrent use.
type Service struct {
	store    store.Store
	temporal client.Client
	hasher   chargeonce.CardHasher
	budget   time.Duration
	prefix   string
	routes   *routing.Table
	now      func() time.Time
	newKey   func() (string, error)
	log      *slog.Logger
	refunds  Refunds
	capture  chargeonce.CaptureMode
	// updates joins the charges of one key: see charge.
	updates singleflight.Group
	// failovers counts the payments moved from a provider, by the
	// provider and the reason.
	failovers *prometheus.CounterVec
	// health skips, for new attempts, a provider that keeps refusing
	// them, and skips counts those skips, by the provider and the reason.
	health *provider.Health
	skips  *prometheus.CounterVec
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("checkout: config: Store is required")
	}
	if cfg.Temporal == nil {
		return nil, errors.New("checkout: config: Temporal client is required")
	}
	if !cfg.CardHasher.Valid() {
		return nil, errors.New("checkout: config: CardHasher is required")
	}
	if cfg.Budget < 0 {
		return nil, fmt.Errorf("checkout: config: budget %v is negative; use zero for the default", cfg.Budget)
	}
	if cfg.ReferencePrefix == "" {
		cfg.ReferencePrefix = DefaultReferencePrefix
	}
	if !chargeonce.ValidReferencePrefix(cfg.ReferencePrefix) {
		return nil, fmt.Errorf("checkout: config: reference prefix %q must be a lower-case letter followed by lower-case letters, digits or underscores", cfg.ReferencePrefix)
	}
	if cfg.Routing == nil {
		cfg.Routing = routing.Of(routing.Provider{})
	}
	if !cfg.Capture.Valid() {
		return nil, fmt.Errorf("checkout: config: capture mode %q is not %s or %s", cfg.Capture, chargeonce.CaptureAutomatic, chargeonce.CaptureManual)
	}
	if cfg.Capture == "" {
		cfg.Capture = chargeonce.CaptureAutomatic
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NewKey == nil {
		cfg.NewKey = NewKey
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	failovers := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chargeonce_checkout_failovers_total",
		Help: "Payments that a checkout moved from a provider to the next of their route, by the provider they left and the reason: not_processed or provider_trouble.",
	}, []string{"provider", "reason"})
	skips := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chargeonce_checkout_provider_skips_total",
		Help: "New attempts that a checkout sent past a provider without asking it, by the provider skipped and the reason: breaker_open.",
	}, []string{"provider", "reason"})
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{failovers, skips} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("checkout: %w", err)
			}
		}
	}
	health, err := provider.NewHealth(cfg.Health, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("checkout: config: %w", err)
	}
	return &Service{
		store:     cfg.Store,
		temporal:  cfg.Temporal,
		hasher:    cfg.CardHasher,
		budget:    cfg.Budget,
		prefix:    cfg.ReferencePrefix,
		routes:    cfg.Routing,
		now:       cfg.Now,
		newKey:    cfg.NewKey,
		log:       cfg.Logger,
		refunds:   cfg.Refunds,
		capture:   cfg.Capture,
		failovers: failovers,
		health:    health,
		skips:     skips,
	}, nil
}

// Timing returns the payment timing that the workers published, which the
// next checkout or sweep start uses: see ReadTiming.
func (s *Service) Timing(ctx context.Context) (workflows.Timing, error) {
	return ReadTiming(ctx, s.store)
}

// ReadTiming reads the payment timing that the workers published in st,
// uncached, for checkouts, refunds and their sweeps alike. It is ErrNoTiming
// when no worker has published one yet, and ErrTimingUnreadable when this
// program cannot use the one published.
func ReadTiming(ctx context.Context, st store.Store) (workflows.Timing, error) {
	p, err := st.PaymentTiming(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return workflows.Timing{}, ErrNoTiming
	}
	if err != nil {
		return workflows.Timing{}, fmt.Errorf("checkout: %w", err)
	}
	t, err := workflows.DecodeTiming(p.Timing)
	if err != nil {
		return workflows.Timing{}, fmt.Errorf("%w: published at %s: %w", ErrTimingUnreadable, p.PublishedAt.Format(time.RFC3339), err)
	}
	return t, nil
}

// budgetFor is how long a checkout under timing t waits for its charge.
func (s *Service) budgetFor(t workflows.Timing) time.Duration {
	if s.budget > 0 {
		return s.budget
	}
	return DefaultBudget(t)
}

// DefaultBudget is how long a request under timing t waits by default for
// the send phase of its workflow (a charge, or a refund), which may use the
// whole published charge budget.
func DefaultBudget(t workflows.Timing) time.Duration {
	return t.SendBudget + budgetMargin
}

// NewKey issues a fresh idempotency key, a UUIDv7: the default of every
// Config.NewKey, for payment attempts and refunds alike.
func NewKey() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// Checkout pays the order with the card, charging it at most once however
// often it is called.
//
// It finds or creates the order's payment attempt and stores its key, then
// asks the attempt's workflow to charge and waits at most the budget for the
// answer. Paid, declined, failed and not processed are final; pending means
// the outcome is still unknown and will be settled by the workflow, or by a
// later Checkout with the same card, which re-sends the same key. Errors are ErrNotFound,
// ErrConflict, ErrNeedsReview, ErrNoTiming, or a failure of the database.
//
// It takes the money in the merchant's capture mode (Config.Capture);
// CheckoutWith chooses another.
func (s *Service) Checkout(ctx context.Context, orderID int64, cardToken string) (Result, error) {
	return s.CheckoutWith(ctx, orderID, cardToken, Capture{})
}

// Capture is how a checkout takes the money.
type Capture struct {
	// Mode is the capture mode; empty means the merchant's
	// (Config.Capture). A manual capture only authorizes: its outcome is
	// OutcomeAuthorized rather than OutcomePaid.
	Mode chargeonce.CaptureMode
	// OnDeadline is what the hold's deadline does; empty is void. Only a
	// manual capture has one.
	OnDeadline chargeonce.DeadlineAction
}

// resolve is c with the merchant's mode for an empty one, checked.
func (c Capture) resolve(merchant chargeonce.CaptureMode) (Capture, error) {
	if c.Mode == "" {
		c.Mode = merchant
	}
	switch {
	case !c.Mode.Valid():
		return Capture{}, fmt.Errorf("checkout: unknown capture mode %q", c.Mode)
	case !c.OnDeadline.Valid():
		return Capture{}, fmt.Errorf("checkout: unknown deadline action %q", c.OnDeadline)
	case c.OnDeadline != "" && !c.Mode.Manual():
		return Capture{}, fmt.Errorf("checkout: a deadline action %q needs the manual capture mode", c.OnDeadline)
	}
	return c, nil
}

// CheckoutWith is Checkout in the capture mode that c chooses. An open
// attempt is reused only for the same mode and deadline action, so that
// one key never charges in two ways.
//
// A new attempt goes to the first provider of the order's route
// (Config.Routing); a payment that no rule routes is a
// *routing.NoRouteError, and nothing is stored. When the attempt's provider
// certainly charged nothing (mayFailOver), the payment moves on to the
// route's next provider, as a new attempt under a new key, within this
// call: its requests were refused unprocessed, or it declined for its own
// trouble. Nothing else moves it: an unknown outcome stays with its
// provider until that provider's lookups settle it, and a card's decline is
// the card's everywhere. A provider that keeps refusing (provider.Health)
// is skipped, as though it had refused, until its probe succeeds; when
// every provider left is skipped, the first of them is asked all the same.
func (s *Service) CheckoutWith(ctx context.Context, orderID int64, cardToken string, c Capture) (Result, error) {
	if cardToken == "" {
		return Result{}, errors.New("checkout: card token is empty")
	}
	c, err := c.resolve(s.capture)
	if err != nil {
		return Result{}, err
	}
	route, err := s.route(ctx, orderID)
	if err != nil {
		return Result{}, err
	}
	var tried []string
	at, report := s.next(orderID, route.Providers, &tried, route.Why)
	for {
		at.failOver = len(untried(route.Providers, tried)) > 0
		res, err := s.checkoutAt(ctx, orderID, cardToken, c, at)
		reason := mayFailOver(res)
		if report != nil {
			report(verdict(err, reason))
		}
		if err != nil || reason == "" {
			return res, err
		}
		// A reused attempt may have gone to another provider than at's.
		from := res.Attempt.Provider
		tried = append(tried, from)
		rest := untried(route.Providers, tried)
		if len(rest) == 0 {
			return res, nil
		}
		s.failovers.WithLabelValues(from, reason).Inc()
		at, report = s.next(orderID, rest, &tried, "failover from "+from+": "+reason)
		s.log.Warn("the payment moves to the next provider of its route: the provider it went to charged nothing",
			"order", orderID, "key", res.Attempt.Key, "from", from, "to", at.provider, "reason", reason)
	}
}

// next is the hop to the first of the providers left (rest, in route
// order) whose health lets it take a new attempt, and the report of that
// attempt's outcome to its health. It adds every provider it skips, and
// the one it chooses, to tried. When it would skip them all, it asks the
// first all the same, without a report: an attempt refused at once costs
// less than a payment refused unasked. why says why the route reached
// rest; a skip adds why it went past the providers it skipped.
func (s *Service) next(orderID int64, rest []string, tried *[]string, why string) (hop, func(provider.Verdict)) {
	var skipped []string
	for _, p := range rest {
		*tried = append(*tried, p)
		report, ok := s.health.Try(p)
		if !ok {
			skipped = append(skipped, p)
			continue
		}
		for _, sk := range skipped {
			s.skips.WithLabelValues(sk, skipBreakerOpen).Inc()
			s.log.Warn("a provider is skipped: it kept refusing new attempts, and its breaker is open until its probe succeeds",
				"order", orderID, "skipped", sk, "to", p, "breaker", s.health.State(sk))
		}
		if len(skipped) > 0 {
			why += fmt.Sprintf("; skipped %s: %s", strings.Join(skipped, ", "), skipBreakerOpen)
		}
		return hop{provider: p, why: why}, report
	}
	*tried = (*tried)[:len(*tried)-len(rest)+1]
	return hop{provider: rest[0], why: why}, nil
}

// hop is where a checkout sends a new attempt.
type hop struct {
	// provider is the provider's name, and why says why it was chosen:
	// the rule, or a failover.
	provider, why string
	// failOver reports that the route has a provider left after this one,
	// so that the attempt's charge phase ends at the first refusal
	// (workflows.PaymentInput.FailOver).
	failOver bool
}

// skipBreakerOpen is why a new attempt skips a provider, the label of the
// skip metric: the router's breaker of the provider is open
// (provider.Health).
const skipBreakerOpen = "breaker_open"

// The reasons a payment moves to another provider, the label of the
// failover metric.
const (
	// failoverNotProcessed: the provider processed none of the attempt's
	// requests: its breaker was open, it refused them unprocessed (429,
	// 503), or they were never sent.
	failoverNotProcessed = "not_processed"
	// failoverProviderTrouble: the provider declined for its own trouble,
	// not the card's (Result.ProviderTrouble).
	failoverProviderTrouble = "provider_trouble"
)

// mayFailOver returns why the outcome of res lets the payment move to
// another provider, or "" when it does not. Only an outcome that proves
// that nothing was charged does: a request that may have been processed
// could still become a charge, and a second provider's charge would then
// be a double charge that no idempotency key prevents, since each
// provider keeps its own keys.
func mayFailOver(res Result) string {
	switch {
	case res.Outcome == OutcomeNotProcessed:
		return failoverNotProcessed
	case res.Outcome == OutcomeDeclined && res.ProviderTrouble:
		return failoverProviderTrouble
	}
	return ""
}

// verdict is what a checkout's attempt tells of its provider's health: its
// error, or the reason its outcome lets the payment move on.
func verdict(err error, failover string) provider.Verdict {
	switch {
	case err != nil:
		return provider.Unheard
	case failover != "":
		return provider.Refused
	}
	return provider.Took
}

// untried is the providers of route that are not in tried, in order.
func untried(route, tried []string) []string {
	var rest []string
	for _, p := range route {
		if !slices.Contains(tried, p) {
			rest = append(rest, p)
		}
	}
	return rest
}

// route reads the order's amount and routes it (Config.Routing).
func (s *Service) route(ctx context.Context, orderID int64) (routing.Route, error) {
	order, err := s.store.Order(ctx, orderID)
	if errors.Is(err, store.ErrNotFound) {
		return routing.Route{}, fmt.Errorf("%w: order %d", ErrNotFound, orderID)
	}
	if err != nil {
		return routing.Route{}, fmt.Errorf("checkout: order %d: %w", orderID, err)
	}
	r, err := s.routes.Route(orderID, order.Amount)
	if err != nil {
		return routing.Route{}, fmt.Errorf("checkout: order %d: %w", orderID, err)
	}
	return r, nil
}

// checkoutAt runs one attempt's checkout at the provider of at, again
// should the attempt it reused be abandoned meanwhile.
func (s *Service) checkoutAt(ctx context.Context, orderID int64, cardToken string, c Capture, at hop) (Result, error) {
	res, err := s.checkout(ctx, orderID, cardToken, c, at)
	if errors.Is(err, errAbandonedMeanwhile) {
		// The reused attempt was abandoned between our transaction and our
		// update, so it never charged; the next transaction starts a new
		// attempt with a new key.
		res, err = s.checkout(ctx, orderID, cardToken, c, at)
	}
	return res, err
}

// errAbandonedMeanwhile reports that the attempt a checkout reused was
// abandoned before the checkout's charge reached its workflow.
var errAbandonedMeanwhile = errors.New("checkout: the attempt was abandoned while the checkout ran")

func (s *Service) checkout(ctx context.Context, orderID int64, cardToken string, c Capture, at hop) (Result, error) {
	timing, err := s.Timing(ctx)
	if err != nil {
		return Result{}, err
	}
	key, err := s.newKey()
	if err != nil {
		return Result{}, fmt.Errorf("checkout: issue idempotency key: %w", err)
	}
	order, attempt, decision, err := s.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID:         orderID,
		CardHash:        s.hasher.Hash(cardToken),
		Key:             key,
		ReferencePrefix: s.prefix,
		Now:             s.now(),
		AbandonAfter:    timing.AbandonAfter,
		Provider:        at.provider,
		RoutedBy:        at.why,
		Capture:         c.Mode,
		OnDeadline:      c.OnDeadline,
	})
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("%w: order %d", ErrNotFound, orderID)
	}
	if err != nil {
		return Result{}, fmt.Errorf("checkout: order %d: %w", orderID, err)
	}
	log := s.log.With("order", orderID, "key", attempt.Key, "provider", attempt.Provider)
	switch decision {
	case store.DecisionAlreadyPaid:
		log.Info("order already paid; nothing charged", "status", order.Status)
		outcome := OutcomePaid
		if order.Status == chargeonce.OrderAuthorized {
			outcome = OutcomeAuthorized
		}
		return Result{Outcome: outcome, Order: order, Attempt: attempt, AlreadyPaid: true}, nil
	case store.DecisionConflict:
		log.Warn("checkout refused: an open attempt with another card or amount is still being verified")
		return Result{}, fmt.Errorf("%w: order %d, open attempt %s", ErrConflict, orderID, attempt.Key)
	case store.DecisionNeedsReview:
		log.Error("checkout refused: a failed attempt needs review", alert.Attr(alert.NeedsReview))
		return Result{}, fmt.Errorf("%w: order %d, failed attempt %s", ErrNeedsReview, orderID, attempt.Key)
	case store.DecisionReused:
		log.Info("reusing the open attempt and its key")
	case store.DecisionCreated:
		log.Info("new payment attempt stored", "reference", attempt.MerchantReference, "routed_by", attempt.RoutedBy)
	default:
		return Result{}, fmt.Errorf("checkout: order %d: unknown store decision %q", orderID, decision)
	}
	return s.charge(ctx, log, timing, Result{Order: order, Attempt: attempt}, cardToken, at.failOver)
}

// charge asks the intent's workflow to charge, joined with every other
// checkout of the same key in this process: one Update-With-Start per key is
// in flight at a time, and the checkouts that arrive meanwhile wait for its
// answer. A click storm on one order so costs the workflow one update, never
// reaching the server's limit on updates in flight per workflow, and every
// click gets the outcome the order reached within the budget.
//
// The joined update runs detached from the context of the checkout that
// began it, so that this client going away does not cut the answer short
// for the others; it is bounded by the budget all the same. A checkout whose
// own context ends first answers from the database, as it would had its
// update failed. base holds the order and the attempt as the checkout's
// transaction left them.
func (s *Service) charge(ctx context.Context, log *slog.Logger, timing workflows.Timing, base Result, cardToken string, failOver bool) (Result, error) {
	return Join(ctx, &s.updates, log, base.Attempt.Key,
		func(ctx context.Context) (Result, error) {
			return s.update(ctx, log, timing, base, cardToken, failOver)
		},
		func(ctx context.Context) (Result, error) { return s.result(ctx, log, base, nil) })
}

// update runs Update-With-Start for the attempt of base under the published
// timing, and turns its answer, or the lack of one, into a Result. A
// workflow it starts ends its charge phase at the first refusal with
// failOver (workflows.PaymentInput.FailOver).
func (s *Service) update(ctx context.Context, log *slog.Logger, timing workflows.Timing, base Result, cardToken string, failOver bool) (Result, error) {
	intent := s.intent(base.Order, base.Attempt, cardToken)
	start := s.temporal.NewWithStartWorkflowOperation(s.startOptions(intent), workflows.PaymentWorkflow,
		workflows.PaymentInput{Intent: intent, Timing: timing, FailOver: failOver})
	// Only an attempt still open must be kept from the sweep; without an
	// answer, the attempt stays open, and the workflow (started now or by
	// the sweep) or a retry with the same card settles it.
	payment := Drive(ctx, s.temporal, log, s.budgetFor(timing), start, client.UpdateWorkflowOptions{
		UpdateName: chargeonce.UpdateCharge,
		Args:       []any{workflows.ChargeRequest{CardToken: intent.CardToken, CardHash: intent.CardHash}},
	}, func(p workflows.PaymentResult) bool { return p.Status.Terminal() }, s.marker(intent.Key))
	return s.result(ctx, log, base, payment)
}

// UpdateWithStart starts the workflow of start, or joins it, sends it the
// update and waits for the update's answer into answer (a pointer), all
// within budget. It is the one way the checkout, the refunds and the moves
// of holds reach their workflows, through Drive.
//
// started reports whether the server accepted the start, even when no
// answer came. The caller then records that the workflow runs, unless the
// answer settled the row, which takes it out of the outbox anyway: a paid
// checkout writes nothing for it. The sweep leaves rows younger than the
// budget alone, so it does not race a caller still waiting; should it
// start a workflow all the same, that is harmless, because the ID is the
// key. An error that is a *serviceerror.WorkflowExecutionAlreadyStarted
// means that the workflow of the ID has closed (REJECT_DUPLICATE), so the
// database holds its outcome.
func UpdateWithStart(ctx context.Context, c client.Client, budget time.Duration, start client.WithStartWorkflowOperation,
	update client.UpdateWorkflowOptions, answer any) (started bool, err error) {
	waitCtx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	// The start's outcome is set only when the server accepts the start,
	// so it is watched while the update runs rather than asked for after.
	startCtx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_, err := start.Get(startCtx)
		started = err == nil
	}()
	update.WaitForStage = client.WorkflowUpdateStageCompleted
	handle, err := c.UpdateWithStartWorkflow(waitCtx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions:          update,
	})
	if err == nil {
		err = handle.Get(waitCtx, answer)
	}
	stopWatching()
	<-watched
	return started, err
}

// result builds the answer of a checkout. payment is the workflow's answer
// to the charge update, which the workflow recorded in the database before
// it answered: the answer moves the order and the attempt of base to where
// the database holds them now, with no read. Without an answer (nil), the
// attempt's stored status is all there is, and it is read.
func (s *Service) result(ctx context.Context, log *slog.Logger, base Result, payment *workflows.PaymentResult) (Result, error) {
	res := base
	if payment == nil {
		// The caller may have given up; the answer is still read, briefly.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		defer cancel()
		var err error
		if res, err = s.load(ctx, base.Order.ID, base.Attempt.Key); err != nil {
			return Result{}, err
		}
	} else {
		res.Attempt.Status = payment.Status
		// The decline code lives in the workflow's answer, not the database.
		res.DeclineCode, res.ProviderTrouble = payment.DeclineCode, payment.ProviderTrouble
		if payment.ProviderPaymentID != "" {
			// The provider's answer stands even where recording it failed.
			res.Attempt.ProviderPaymentID = payment.ProviderPaymentID
		}
	}
	status := res.Attempt.Status
	res.Order.Status = chargeonce.OrderStatusAfter(status)
	// A manual capture's success is a hold, which leaves the order
	// authorized rather than paid (chargeonce.OrderHoldAuthorized).
	authorized := status == chargeonce.AttemptSucceeded && res.Attempt.Capture.Manual()
	if authorized {
		res.Order.Status = chargeonce.OrderAuthorized
	}
	if res.Order.Status == chargeonce.OrderPaid && res.Order.ProviderPaymentID == "" {
		res.Order.ProviderPaymentID = res.Attempt.ProviderPaymentID
	}
	switch status {
	case chargeonce.AttemptSucceeded:
		res.Outcome = OutcomePaid
		if authorized {
			res.Outcome = OutcomeAuthorized
		}
	case chargeonce.AttemptDeclined:
		res.Outcome = OutcomeDeclined
	case chargeonce.AttemptFailed:
		res.Outcome = OutcomeFailed
	case chargeonce.AttemptNotProcessed:
		res.Outcome = OutcomeNotProcessed
	case chargeonce.AttemptOpen:
		res.Outcome = OutcomePending
	case chargeonce.AttemptAbandoned:
		return Result{}, errAbandonedMeanwhile
	default:
		return Result{}, fmt.Errorf("checkout: order %d: attempt %s has unknown status %q", base.Order.ID, base.Attempt.Key, status)
	}
	log.Debug("checkout answered", "outcome", res.Outcome, "charge", res.Attempt.ProviderPaymentID, "decline_code", res.DeclineCode)
	return res, nil
}

// storeTimeout bounds the database writes and reads that must happen even
// when the caller has gone.
const storeTimeout = 5 * time.Second

// load reads the order and the attempt with the given key.
func (s *Service) load(ctx context.Context, orderID int64, key string) (Result, error) {
	order, attempts, err := s.store.GetOrder(ctx, orderID)
	if err != nil {
		return Result{}, fmt.Errorf("checkout: order %d: %w", orderID, err)
	}
	for _, a := range attempts {
		if a.Key == key {
			return Result{Order: order, Attempt: a}, nil
		}
	}
	return Result{}, fmt.Errorf("checkout: order %d has no attempt with key %s", orderID, key)
}

// marker records that the workflow of the attempt with this key runs
// (Drive, StartOutbox).
func (s *Service) marker(key string) func(context.Context) error {
	return func(ctx context.Context) error { return s.store.MarkWorkflowStarted(ctx, key) }
}

// intent builds the payment intent of an attempt. Checkout and the sweep
// build it the same way, so that every request under one key has the same
// body whichever of them started the workflow.
func (s *Service) intent(order store.Order, a store.Attempt, cardToken string) chargeonce.PaymentIntent {
	description := order.Description
	if description == "" {
		description = "Order " + strconv.FormatInt(order.ID, 10)
	}
	return chargeonce.PaymentIntent{
		Key:               a.Key,
		OrderID:           a.OrderID,
		Amount:            a.Amount,
		CardToken:         cardToken,
		CardHash:          a.CardHash,
		CardHashKeyed:     a.CardHashKeyed,
		MerchantReference: a.MerchantReference,
		Description:       description,
		CreatedAt:         a.CreatedAt,
		Provider:          a.Provider,
		// An automatic capture stays empty, as in every intent from before
		// holds, so that its workflow's input is what it always was.
		Capture:    manualOnly(a.Capture, a.Capture),
		OnDeadline: manualOnly(a.Capture, a.OnDeadline),
	}
}

// manualOnly is v for an attempt of a manual capture, and empty otherwise.
func manualOnly[T ~string](mode chargeonce.CaptureMode, v T) T {
	if !mode.Manual() {
		return ""
	}
	return v
}

// startOptions are the options of every start of a payment workflow
// (StartOptions).
func (s *Service) startOptions(intent chargeonce.PaymentIntent) client.StartWorkflowOptions {
	return StartOptions(workflows.WorkflowID(intent.Key), workflows.StartSearchAttributes(intent))
}
