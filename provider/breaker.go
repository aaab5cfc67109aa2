package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerConfig configures the circuit breakers. Each zero field takes its
// default: open after 5 consecutive provider failures within a 1 minute
// window, stay open 10 seconds, then let 1 probe through; the failure-ratio
// rule is off.
type BreakerConfig struct {
	// ConsecutiveFailures opens the breaker after this many provider
	// failures in a row within Window. Default 5.
	ConsecutiveFailures uint32
	// FailureRatio, in (0, 1], also opens the breaker when at least this
	// fraction of the answered requests within Window failed, once there
	// were MinRequests of them. It catches a provider that fails often but
	// never five times in a row. Zero turns the rule off.
	FailureRatio float64
	// MinRequests is how many answered requests within Window the ratio
	// rule needs before it judges. Default 20.
	MinRequests uint32
	// Window is the rolling period over which failures are counted, so that
	// failures far apart in time do not add up. Default 1 minute; at least
	// 10 milliseconds.
	Window time.Duration
	// OpenTimeout is how long an open breaker refuses requests before it
	// lets probes through. Default 10 seconds.
	OpenTimeout time.Duration
	// HalfOpenProbes is how many requests a half-open breaker lets through;
	// that many successes in a row close it, one failure opens it again.
	// Default 1.
	HalfOpenProbes uint32
}

// DefaultBreakerOpenTimeout is how long an open breaker refuses requests when
// BreakerConfig.OpenTimeout is zero.
const DefaultBreakerOpenTimeout = 10 * time.Second

// windowBuckets is how finely Window rolls: counts age out a tenth of the
// window at a time rather than all at once.
const windowBuckets = 10

func (b BreakerConfig) settings() (gobreaker.Settings, error) {
	switch {
	case math.IsNaN(b.FailureRatio) || b.FailureRatio < 0 || b.FailureRatio > 1:
		return gobreaker.Settings{}, fmt.Errorf("provider: BreakerConfig.FailureRatio %v is not in [0, 1]", b.FailureRatio)
	case b.Window < 0 || (b.Window > 0 && b.Window < 10*time.Millisecond):
		return gobreaker.Settings{}, fmt.Errorf("provider: BreakerConfig.Window %v must be zero (default) or at least 10ms", b.Window)
	case b.OpenTimeout < 0:
		return gobreaker.Settings{}, fmt.Errorf("provider: BreakerConfig.OpenTimeout %v is negative", b.OpenTimeout)
	}
	consecutive := orDefault(b.ConsecutiveFailures, 5)
	minRequests := orDefault(b.MinRequests, 20)
	window := orDefault(b.Window, time.Minute)
	ratio := b.FailureRatio
	return gobreaker.Settings{
		MaxRequests:  orDefault(b.HalfOpenProbes, 1),
		Interval:     window,
		BucketPeriod: window / windowBuckets,
		Timeout:      orDefault(b.OpenTimeout, DefaultBreakerOpenTimeout),
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if c.ConsecutiveFailures >= consecutive {
				return true
			}
			answered := c.TotalSuccesses + c.TotalFailures
			return ratio > 0 && answered >= minRequests && float64(c.TotalFailures) >= ratio*float64(answered)
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errNoHealthSignal) },
	}, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// breaker is a two-step breaker: Breaker asks before the adapter sends and
// reports after it has read the answer, with a verdict computed from the
// whole exchange.
type breaker = gobreaker.TwoStepCircuitBreaker[struct{}]

func newBreaker(name string, st gobreaker.Settings, log *slog.Logger) *breaker {
	st.Name = name
	st.OnStateChange = func(name string, from, to gobreaker.State) {
		level := slog.LevelInfo
		if to == gobreaker.StateOpen {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "provider circuit breaker changed state",
			"breaker", name, "from", from.String(), "to", to.String())
	}
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
}

// Breaker is a Port behind circuit breakers: while its provider is failing it
// refuses requests with BreakerOpen and sends nothing. Charges, refunds and
// lookups have a breaker each, so that each endpoint proves its own health:
// a lookup never becomes the half-open probe that decides whether charges
// flow again, and a provider whose refunds fail (a refund service down, a
// rule of its own that rejects them) does not stop customers from paying,
// nor a charge outage hold back the money owed to customers. Refund lookups
// share the lookup breaker with charge lookups: both are the same paced
// reads on the lookup task queue, and both only ever delay a decision. It
// is the one breaker of every adapter.
//
// Captures and voids of holds have a breaker of their own too: a capture
// outage must neither stop new payments nor be judged by them, and
// GetCharge, a read, shares the lookup breaker.
type Breaker struct {
	port    Port
	charges *breaker
	refunds *breaker
	holds   *breaker
	lookups *breaker
}

// NewBreaker puts port behind breakers configured by cfg, which log their
// state changes to log (nil means slog.Default()).
func NewBreaker(port Port, cfg BreakerConfig, log *slog.Logger) (*Breaker, error) {
	if port == nil {
		return nil, errors.New("provider: NewBreaker needs a port")
	}
	settings, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Breaker{
		port:    port,
		charges: newBreaker("provider-charges", settings, log),
		refunds: newBreaker("provider-refunds", settings, log),
		holds:   newBreaker("provider-holds", settings, log),
		lookups: newBreaker("provider-lookups", settings, log),
	}, nil
}

// Charge sends req through the port unless the charge breaker is open.
func (b *Breaker) Charge(ctx context.Context, req ChargeRequest) Result {
	return guard(ctx, b.charges, func() Result { return b.port.Charge(ctx, req) },
		func(r *Result) *Exchange { return &r.Exchange })
}

// Refund sends req through the port unless the refund breaker is open.
func (b *Breaker) Refund(ctx context.Context, req RefundRequest) RefundResult {
	return guard(ctx, b.refunds, func() RefundResult { return b.port.Refund(ctx, req) },
		func(r *RefundResult) *Exchange { return &r.Exchange })
}

// Capture sends req through the port unless the hold breaker is open.
func (b *Breaker) Capture(ctx context.Context, req CaptureRequest) CaptureResult {
	return guard(ctx, b.holds, func() CaptureResult { return b.port.Capture(ctx, req) },
		func(r *CaptureResult) *Exchange { return &r.Exchange })
}

// Void sends req through the port unless the hold breaker is open.
func (b *Breaker) Void(ctx context.Context, req VoidRequest) VoidResult {
	return guard(ctx, b.holds, func() VoidResult { return b.port.Void(ctx, req) },
		func(r *VoidResult) *Exchange { return &r.Exchange })
}

// guard sends one request through call unless br is open or ctx has ended,
// and reports the exchange's verdict to br. exchange points into a result
// at its Exchange, which a request held back fills alone.
func guard[R any](ctx context.Context, br *breaker, call func() R, exchange func(*R) *Exchange) R {
	var res R
	if err := ctx.Err(); err != nil {
		*exchange(&res) = Exchange{Outcome: Timeout, Detail: "not sent: " + err.Error()}
		return res
	}
	done, err := br.Allow()
	if err != nil {
		*exchange(&res) = Exchange{Outcome: BreakerOpen, Detail: refusal(br)}
		return res
	}
	res = call()
	ex := exchange(&res)
	done(breakerVerdict(ctx, ex.Outcome, ex.Sent))
	return res
}

// FindCharges looks the reference up through the port unless the lookup
// breaker is open.
func (b *Breaker) FindCharges(ctx context.Context, merchantReference string) ([]Charge, error) {
	const op = "find charges"
	var charges []Charge
	err := b.lookup(ctx, op, func() error {
		var err error
		charges, err = b.port.FindCharges(ctx, merchantReference)
		return err
	})
	return charges, err
}

// FindRefunds looks the refunds of the reference up through the port unless
// the lookup breaker is open.
func (b *Breaker) FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]Refund, error) {
	const op = "find refunds"
	var refunds []Refund
	err := b.lookup(ctx, op, func() error {
		var err error
		refunds, err = b.port.FindRefunds(ctx, chargeID, merchantReference)
		return err
	})
	return refunds, err
}

// GetCharge reads the charge through the port unless the lookup breaker is
// open.
func (b *Breaker) GetCharge(ctx context.Context, id string) (Charge, error) {
	const op = "get charge"
	var charge Charge
	err := b.lookup(ctx, op, func() error {
		var err error
		charge, err = b.port.GetCharge(ctx, id)
		return err
	})
	return charge, err
}

// Limits reads the limits through the port unless the lookup breaker is
// open.
func (b *Breaker) Limits(ctx context.Context) (Limits, error) {
	const op = "limits"
	var limits Limits
	err := b.lookup(ctx, op, func() error {
		var err error
		limits, err = b.port.Limits(ctx)
		return err
	})
	return limits, err
}

func (b *Breaker) lookup(ctx context.Context, op string, call func() error) error {
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Outcome: Timeout, Detail: "not sent: " + err.Error()}
	}
	done, err := b.lookups.Allow()
	if err != nil {
		return &Error{Op: op, Outcome: BreakerOpen, Detail: refusal(b.lookups)}
	}
	err = call()
	var perr *Error
	switch {
	case err == nil:
		done(nil)
	case errors.As(err, &perr):
		done(breakerVerdict(ctx, perr.Outcome, perr.StatusCode != 0))
	default:
		done(errNoHealthSignal)
	}
	return err
}

func refusal(br *breaker) string {
	return "not sent: circuit breaker " + br.Name() + " is " + br.State().String()
}

var (
	errProviderFailure = errors.New("provider failure")
	errNoHealthSignal  = errors.New("no provider health signal")
)

// breakerVerdict says what one exchange, read as outcome, tells about the
// provider's health: nil for healthy, errProviderFailure, or
// errNoHealthSignal to count it as neither.
//
// Only signs that the provider cannot serve us are failures: a server error,
// a broken or refused connection, and a deadline passed while waiting for
// it. Every deliberate answer is a success, whatever it says: a decline, a
// 409 for a key in flight, a refusal of our request, even an answer that
// breaks the contract, because a breaker cannot fix any of them and opening
// it would only turn a correct answer into a refusal.
//
// Neither counts: a 429, since the provider is healthy and its Retry-After
// already paces the caller, while opening the breaker would stop every
// payment for a quota signal; a caller that cancelled, which says nothing
// about the provider; and a request the adapter refused to send.
func breakerVerdict(ctx context.Context, outcome Outcome, sent bool) error {
	switch outcome {
	case Unavailable, TransportError:
		return errProviderFailure
	case Timeout:
		if errors.Is(ctx.Err(), context.Canceled) {
			return errNoHealthSignal
		}
		return errProviderFailure
	case RateLimited:
		return errNoHealthSignal
	case InvalidRequest:
		if !sent {
			return errNoHealthSignal
		}
	}
	return nil
}
