package main

import (
	"errors"
	"flag"
	"time"

	"chargeonce/internal/cli"
	"chargeonce/internal/envflag"
	"chargeonce/provider/dialect"
	"chargeonce/provider/stripe"
	"chargeonce/worker"
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
		timeout:   fs.Duration("provider-timeout", worker.DefaultProviderTimeout, "upper bound of any one HTTP exchange with the provider (charges are bounded by --attempt-timeout)"),
		stripeKey: fs.String("stripe-api-key", "", "Stripe secret `key`, sk_test_… for test mode or sk_live_… (with --provider stripe)"),
		searchDelay: fs.Duration("stripe-search-delay", stripe.SearchDelay,
			"how long Stripe's search may lag behind a new PaymentIntent; --reconcile-min-age must exceed it (with --provider stripe)"),
	}
}

// config is the provider the flags describe, or which flags do not go
// together; worker.Prepare checks the values.
func (f *providerFlags) config() (worker.ProviderConfig, error) {
	switch stripeOnly := envflag.AnyGiven(f.fs, "stripe-api-key", "stripe-search-delay"); {
	case *f.api == dialect.IETF && stripeOnly:
		return worker.ProviderConfig{}, cli.UsageError{Err: errors.New("--stripe-api-key and --stripe-search-delay need --provider stripe")}
	case *f.api == dialect.Stripe && *f.stripeKey == "":
		return worker.ProviderConfig{}, cli.UsageError{Err: errors.New("--provider stripe needs --stripe-api-key (sk_test_… for test mode)")}
	}
	url := *f.url
	if *f.api == dialect.Stripe && !envflag.AnyGiven(f.fs, "provider-url") {
		url = stripe.DefaultBaseURL
	}
	return worker.ProviderConfig{
		API: *f.api, URL: url, Timeout: *f.timeout, StripeAPIKey: *f.stripeKey, StripeSearchDelay: *f.searchDelay,
	}, nil
}
