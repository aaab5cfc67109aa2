package dialect

import (
	"errors"
	"flag"
	"time"

	"chargeonce"
	"chargeonce/internal/envflag"
	"chargeonce/provider/stripe"
)

// DefaultURL is the fake provider of the dev stack, which speaks both APIs.
const DefaultURL = "http://localhost:8099"

// NameFlagName is the flag that names the provider.
const NameFlagName = "provider-name"

// The names of the other flags of a provider's settings (RegisterFlags).
const (
	apiFlag         = "provider"
	urlFlag         = "provider-url"
	timeoutFlag     = "provider-timeout"
	stripeKeyFlag   = "stripe-api-key"
	searchDelayFlag = "stripe-search-delay"
)

// nameValue is the value of the name flag, checked as it is set.
type nameValue string

func (n *nameValue) String() string { return string(*n) }

func (n *nameValue) Set(s string) error {
	if err := chargeonce.CheckProviderName(s); err != nil {
		return err
	}
	*n = nameValue(s)
	return nil
}

// NameFlag defines the flag that names the provider on fs. The API, which
// sends nothing to a provider but stores the name of the one its attempts
// and refunds go to, takes it alone; RegisterFlags defines it with the
// rest.
func NameFlag(fs *flag.FlagSet) *string {
	name := nameValue(chargeonce.DefaultProvider)
	fs.Var(&name, NameFlagName, "`name` of the card provider, stored with every payment attempt and refund; the API and the workers must give the same,\n"+
		"and it must not change once payments are stored, which keep the name they were sent to")
	return (*string)(&name)
}

// Flags are the flags of one provider's settings, defined by RegisterFlags.
type Flags struct {
	fs          *flag.FlagSet
	name        *string
	api         *string
	url         *string
	timeout     *time.Duration
	stripeKey   *string
	searchDelay *time.Duration
}

// RegisterFlags defines the flags of a provider's settings on fs: its name,
// the API it speaks and how to reach it. Settings reads them once fs is
// parsed.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		fs:        fs,
		name:      NameFlag(fs),
		api:       fs.String(apiFlag, IETF, "`API` the card provider speaks: "+Names),
		url:       fs.String(urlFlag, DefaultURL, "card provider base `URL` (with --provider stripe, default Stripe's API, "+stripe.DefaultBaseURL+")"),
		timeout:   fs.Duration(timeoutFlag, DefaultTimeout, "upper bound of any one HTTP exchange with the provider (charges are bounded by --attempt-timeout)"),
		stripeKey: fs.String(stripeKeyFlag, "", "Stripe secret `key`, sk_test_… for test mode or sk_live_… (with --provider stripe)"),
		searchDelay: fs.Duration(searchDelayFlag, stripe.SearchDelay,
			"how long Stripe's search may lag behind a new PaymentIntent; --reconcile-min-age must exceed it (with --provider stripe)"),
	}
}

// Names are the names of the flags that RegisterFlags defines, which a
// routing file replaces.
func (f *Flags) Names() []string {
	return []string{NameFlagName, apiFlag, urlFlag, timeoutFlag, stripeKeyFlag, searchDelayFlag}
}

// Settings are the settings the parsed flags describe, or an error that
// says which flags do not go together; New checks the values.
func (f *Flags) Settings() (Settings, error) {
	switch stripeOnly := envflag.AnyGiven(f.fs, stripeKeyFlag, searchDelayFlag); {
	case *f.api == IETF && stripeOnly:
		return Settings{}, errors.New("--stripe-api-key and --stripe-search-delay need --provider stripe")
	case *f.api == Stripe && *f.stripeKey == "":
		return Settings{}, errors.New("--provider stripe needs --stripe-api-key (sk_test_… for test mode)")
	}
	url := *f.url
	if *f.api == Stripe && !envflag.AnyGiven(f.fs, urlFlag) {
		url = stripe.DefaultBaseURL
	}
	return Settings{
		Name: *f.name, API: *f.api, URL: url, Timeout: *f.timeout,
		StripeAPIKey: *f.stripeKey, StripeLookupDelay: *f.searchDelay,
	}, nil
}
