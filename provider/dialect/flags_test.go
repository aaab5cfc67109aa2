package dialect_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/provider/dialect"
	"chargeonce/provider/stripe"
)

func parse(t *testing.T, args ...string) (dialect.Settings, error) {
	t.Helper()
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := dialect.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return dialect.Settings{}, err
	}
	return f.Settings()
}

func TestFlags_DefaultToTheFakeProviderNamedDefault(t *testing.T) {
	s, err := parse(t)
	require.NoError(t, err)
	require.Equal(t, dialect.Settings{
		Name: chargeonce.DefaultProvider, API: dialect.IETF, URL: dialect.DefaultURL, Timeout: dialect.DefaultTimeout,
		StripeLookupDelay: stripe.SearchDelay,
	}, s)
}

func TestFlags_DescribeStripeOnItsOwnAPIUnderAName(t *testing.T) {
	s, err := parse(t, "--provider-name", "stripe-eu", "--provider", "stripe", "--stripe-api-key", "sk_test_1", "--provider-timeout", "5s")
	require.NoError(t, err)
	require.Equal(t, dialect.Settings{
		Name: "stripe-eu", API: dialect.Stripe, URL: stripe.DefaultBaseURL, Timeout: 5 * time.Second,
		StripeAPIKey: "sk_test_1", StripeLookupDelay: stripe.SearchDelay,
	}, s)
}

func TestFlags_RefuseWhatDoesNotGoTogether(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider-name", "Stripe"}, `provider name "Stripe" must be a lower-case letter`},
		{[]string{"--provider-name", ""}, `provider name "" must be`},
		{[]string{"--stripe-api-key", "sk_test_1"}, "--stripe-api-key and --stripe-search-delay need --provider stripe"},
		{[]string{"--provider", "stripe"}, "--provider stripe needs --stripe-api-key"},
	} {
		_, err := parse(t, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
	}
}
