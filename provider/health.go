package provider

import (
	"log/slog"
	"sync"

	"github.com/sony/gobreaker/v2"
)

// Health is the router's view of whether each provider takes payments at
// all. The process that routes new attempts (the API) does not see the
// workers' breakers, so it keeps a breaker of its own per provider, fed by
// the outcome of every attempt it sent there: an attempt that the provider
// refused without processing it (or declined for its own trouble) is a
// failure, any other outcome a success. Once BreakerConfig's rules open a
// provider's breaker, new attempts skip that provider and go straight to
// the next of their route, so that an outage costs a checkout nothing
// beyond the first few refusals. After OpenTimeout the next attempt there
// is the probe: taken, it closes the breaker; refused, it opens it again.
type Health struct {
	settings gobreaker.Settings
	log      *slog.Logger

	mu       sync.Mutex
	breakers map[string]*breaker
}

// NewHealth returns a Health whose breakers follow cfg, with the workers'
// defaults for each zero field, and log their state changes to log (nil
// means slog.Default()).
func NewHealth(cfg BreakerConfig, log *slog.Logger) (*Health, error) {
	settings, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Health{settings: settings, log: log, breakers: map[string]*breaker{}}, nil
}

// Verdict is what the outcome of one attempt tells of its provider.
type Verdict int

// The verdicts.
const (
	// Took: the provider processed the attempt, whatever it answered.
	Took Verdict = iota + 1
	// Refused: the provider charged nothing, for its own reasons.
	Refused
	// Unheard: the attempt ended for reasons of ours (a conflict, a store
	// or Temporal error) before the provider's answer said anything.
	Unheard
)

// Try asks whether a new attempt may go to the provider now. When it may,
// report must be called once with the attempt's verdict.
func (h *Health) Try(provider string) (report func(Verdict), ok bool) {
	done, err := h.breaker(provider).Allow()
	if err != nil {
		return nil, false
	}
	return func(v Verdict) {
		switch v {
		case Took:
			done(nil)
		case Refused:
			done(errProviderFailure)
		default:
			done(errNoHealthSignal)
		}
	}, true
}

// State names the state of the provider's breaker: closed, half-open or
// open.
func (h *Health) State(provider string) string {
	return h.breaker(provider).State().String()
}

func (h *Health) breaker(provider string) *breaker {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.breakers[provider]
	if b == nil {
		b = newBreaker("routing-"+provider, h.settings, h.log)
		h.breakers[provider] = b
	}
	return b
}
