// Package dialect builds the provider port for the API a provider speaks,
// behind the circuit breakers: the one place that knows every adapter.
package dialect

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"chargeonce/provider"
	"chargeonce/provider/ietf"
	"chargeonce/provider/stripe"
)

// The provider APIs chargeonce speaks.
const (
	// IETF is the IETF draft's contract (docs/provider-http.md), which the
	// fake provider speaks at its root.
	IETF = "ietf"
	// Stripe is Stripe's PaymentIntents API.
	Stripe = "stripe"
)

// Names lists the APIs, for flag help and errors.
const Names = IETF + " or " + Stripe

// Check refuses an API name that is not one of the APIs.
func Check(api string) error {
	if api != IETF && api != Stripe {
		return fmt.Errorf("unknown API %q: want %s", api, Names)
	}
	return nil
}

// Config configures the port.
type Config struct {
	// API is IETF or Stripe; empty means IETF.
	API string
	// BaseURL is the provider's root. IETF needs one; for Stripe, empty
	// means Stripe's own API.
	BaseURL string
	// HTTPClient sends the requests; it must have a positive Timeout.
	HTTPClient *http.Client
	// StripeAPIKey is the secret key, for Stripe only.
	StripeAPIKey string
	// StripeLookupDelay is how long Stripe's search may lag behind a new
	// PaymentIntent (stripe.SearchDelay against Stripe), for Stripe only.
	StripeLookupDelay time.Duration
	// Breaker configures the circuit breakers; the zero value is sensible.
	Breaker provider.BreakerConfig
	// Logger receives the breakers' state changes; nil means
	// slog.Default().
	Logger *slog.Logger
}

// New builds the adapter of cfg.API and puts it behind the breakers.
func New(cfg Config) (*provider.Breaker, error) {
	var (
		port provider.Port
		err  error
	)
	switch cfg.API {
	case IETF, "":
		if cfg.StripeAPIKey != "" {
			return nil, fmt.Errorf("provider: a Stripe API key is for the %s API only", Stripe)
		}
		port, err = ietf.New(ietf.Config{BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient})
	case Stripe:
		port, err = stripe.New(stripe.Config{
			APIKey:      cfg.StripeAPIKey,
			BaseURL:     cfg.BaseURL,
			HTTPClient:  cfg.HTTPClient,
			LookupDelay: cfg.StripeLookupDelay,
		})
	default:
		return nil, fmt.Errorf("provider: %w", Check(cfg.API))
	}
	if err != nil {
		return nil, err
	}
	return provider.NewBreaker(port, cfg.Breaker, cfg.Logger)
}
