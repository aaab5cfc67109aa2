// Package dialect builds the provider port for the API a provider speaks,
// behind the circuit breakers: the one place that knows every adapter, and
// the one owner of a provider's settings (Settings) and of their flags
// (RegisterFlags), which the worker command, the dev stack and the tests
// all use.
package dialect

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"chargeonce"
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

// DefaultTimeout bounds any one HTTP exchange with the provider, unless the
// settings say otherwise; a charge request is bounded by the much shorter
// attempt timeout as well.
const DefaultTimeout = 30 * time.Second

// Check refuses an API name that is not one of the APIs.
func Check(api string) error {
	if api != IETF && api != Stripe {
		return fmt.Errorf("unknown API %q: want %s", api, Names)
	}
	return nil
}

// Settings are one provider's settings: the name that the attempts and
// refunds sent to it store, the API it speaks and how to reach it.
type Settings struct {
	// Name names the provider in the database and in the provider
	// registry; empty means chargeonce.DefaultProvider (NameOrDefault).
	Name string
	// API is IETF or Stripe; empty means IETF.
	API string
	// URL is the provider's root. IETF needs one; for Stripe, empty means
	// Stripe's own API, stripe.DefaultBaseURL.
	URL string
	// Timeout bounds any one HTTP exchange with the provider: positive,
	// DefaultTimeout unless the provider needs another.
	Timeout time.Duration
	// StripeAPIKey is the secret key, for Stripe only.
	StripeAPIKey string
	// StripeLookupDelay is how long Stripe's search may lag behind a new
	// PaymentIntent, for Stripe only: stripe.SearchDelay against Stripe,
	// zero for a stand-in whose search reads its books at once.
	StripeLookupDelay time.Duration
}

// NameOrDefault is the provider's name, chargeonce.DefaultProvider unless
// Name says otherwise.
func (s Settings) NameOrDefault() string {
	return cmp.Or(s.Name, chargeonce.DefaultProvider)
}

// Config is what New needs: a provider's settings, and how the process
// runs its port.
type Config struct {
	Settings
	// HTTPClient sends the requests; nil means a client bounded by
	// Settings.Timeout. A client given must have a positive Timeout.
	HTTPClient *http.Client
	// Breaker configures the circuit breakers; the zero value is sensible.
	Breaker provider.BreakerConfig
	// Logger receives the breakers' state changes; nil means
	// slog.Default().
	Logger *slog.Logger
}

// New builds the adapter of cfg.API and puts it behind breakers of its
// own: every port New returns fails, and stops sending, on its own.
func New(cfg Config) (*provider.Breaker, error) {
	if err := chargeonce.CheckProviderName(cfg.NameOrDefault()); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		if cfg.Timeout <= 0 {
			return nil, fmt.Errorf("provider: the timeout %v is not positive", cfg.Timeout)
		}
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	var (
		port provider.Port
		err  error
	)
	switch cfg.API {
	case IETF, "":
		if cfg.StripeAPIKey != "" {
			return nil, fmt.Errorf("provider: a Stripe API key is for the %s API only", Stripe)
		}
		port, err = ietf.New(ietf.Config{BaseURL: cfg.URL, HTTPClient: hc})
	case Stripe:
		port, err = stripe.New(stripe.Config{
			APIKey:      cfg.StripeAPIKey,
			BaseURL:     cfg.URL,
			HTTPClient:  hc,
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

// NewRegistry builds the provider registry of a process that reaches the
// providers of settings: each one's port from New, behind breakers of its
// own, under its name; the first is the default. The worker builds its
// registry here, from its provider flags or from its routing file, so that
// a test of the providers it reaches builds the very same one. logger
// receives the breakers' state changes. An error names the provider at
// fault.
func NewRegistry(logger *slog.Logger, settings ...Settings) (provider.Registry, error) {
	if len(settings) == 0 {
		return provider.Registry{}, errors.New("provider registry: no provider")
	}
	ports := make(map[string]provider.Port, len(settings))
	for _, s := range settings {
		name := s.NameOrDefault()
		// A second port under one name would replace the first silently,
		// and the attempts stored under that name would reach either.
		if _, dup := ports[name]; dup {
			return provider.Registry{}, fmt.Errorf("provider %q: the name is given twice", name)
		}
		port, err := New(Config{Settings: s, Logger: logger})
		if err != nil {
			return provider.Registry{}, fmt.Errorf("provider %q: %w", name, err)
		}
		ports[name] = port
	}
	return provider.NewRegistry(ports, settings[0].NameOrDefault())
}
