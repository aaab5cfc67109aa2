package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"chargeonce/internal/cli"
	"chargeonce/internal/envflag"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/settlement"
	"chargeonce/provider/stripe"
	"chargeonce/workflows"
)

// defaultProviderURL is the fake provider of the dev stack, which speaks
// both APIs.
const defaultProviderURL = "http://localhost:8099"

// providerFlags are the flags that choose the card provider and how to
// reach it.
type providerFlags struct {
	fs          *flag.FlagSet
	api         *string
	url         *string
	timeout     *time.Duration
	stripeKey   *string
	searchDelay *time.Duration
}

func providerFlagsOf(fs *flag.FlagSet) *providerFlags {
	return &providerFlags{
		fs:        fs,
		api:       fs.String("provider", dialect.IETF, "`API` the card provider speaks: "+dialect.Names),
		url:       fs.String("provider-url", defaultProviderURL, "card provider base `URL` (with --provider stripe, default Stripe's API, "+stripe.DefaultBaseURL+")"),
		timeout:   fs.Duration("provider-timeout", 30*time.Second, "upper bound of any one HTTP exchange with the provider (charges are bounded by --attempt-timeout)"),
		stripeKey: fs.String("stripe-api-key", "", "Stripe secret `key`, sk_test_… for test mode or sk_live_… (with --provider stripe)"),
		searchDelay: fs.Duration("stripe-search-delay", stripe.SearchDelay,
			"how long Stripe's search may lag behind a new PaymentIntent; --reconcile-min-age must exceed it (with --provider stripe)"),
	}
}

// port builds the provider port the flags describe, or says which flag is
// wrong.
func (f *providerFlags) port(logger *slog.Logger) (*provider.Breaker, string, error) {
	if *f.timeout <= 0 {
		return nil, "", cli.UsageError{Err: errors.New("--provider-timeout must be positive")}
	}
	if err := dialect.Check(*f.api); err != nil {
		return nil, "", cli.UsageError{Err: fmt.Errorf("--provider: %w", err)}
	}
	switch stripeOnly := envflag.AnyGiven(f.fs, "stripe-api-key", "stripe-search-delay"); {
	case *f.api == dialect.IETF && stripeOnly:
		return nil, "", cli.UsageError{Err: errors.New("--stripe-api-key and --stripe-search-delay need --provider stripe")}
	case *f.api == dialect.Stripe && *f.stripeKey == "":
		return nil, "", cli.UsageError{Err: errors.New("--provider stripe needs --stripe-api-key (sk_test_… for test mode)")}
	}
	url := *f.url
	if *f.api == dialect.Stripe && !envflag.AnyGiven(f.fs, "provider-url") {
		url = stripe.DefaultBaseURL
	}
	p, err := dialect.New(dialect.Config{
		API:               *f.api,
		BaseURL:           url,
		HTTPClient:        &http.Client{Timeout: *f.timeout},
		StripeAPIKey:      *f.stripeKey,
		StripeLookupDelay: *f.searchDelay,
		Logger:            logger,
	})
	if err != nil {
		return nil, "", cli.UsageError{Err: err}
	}
	return p, url, nil
}

// settlementReports is the client of the provider's settlement reports at
// flagURL, or by default at the provider's URL; nil, with a warning, on
// Stripe's own API, which publishes its reports in another way.
func settlementReports(flagURL, providerURL string, logger *slog.Logger) (*settlement.Client, error) {
	u := flagURL
	if u == "" {
		if providerURL == stripe.DefaultBaseURL {
			logger.Warn("no daily settlement: Stripe publishes its settlement reports through its Reporting API, which chargeonce does not read; give --settlement-url to read reports in the provider contract's format")
			return nil, nil
		}
		u = providerURL
	}
	// A report download is bounded like its activity, not by
	// --provider-timeout, which bounds one charge or lookup.
	hc := &http.Client{Timeout: workflows.SettlementActivityTimeout}
	if _, err := provider.CheckHTTP(u, hc); err != nil {
		return nil, cli.UsageError{Err: fmt.Errorf("--settlement-url: %w", err)}
	}
	return &settlement.Client{BaseURL: u, HTTP: hc}, nil
}
