package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
)

// The routing file of a run with a backup is the one the worker reads: both
// providers in the stack's order, each payment to the first, in the run's
// dialect and timeout.
func TestWriteRouting_NamesBothProvidersAsTheWorkerReadsThem(t *testing.T) {
	fakes := []fakeAt{{chargeonce.DefaultProvider, "http://127.0.0.1:8099"}, {stack.BackupName, "http://127.0.0.1:8098"}}
	for _, api := range []string{dialect.IETF, dialect.Stripe} {
		t.Run(api, func(t *testing.T) {
			path, err := writeRouting(t.TempDir(), Config{ProviderAPI: api}, fakes)
			require.NoError(t, err)

			table, err := routing.Load(path)

			require.NoError(t, err)
			require.Equal(t, chargeonce.DefaultProvider, table.Default())
			providers := table.Providers()
			require.Len(t, providers, 2)
			for i, p := range providers {
				require.Equal(t, fakes[i].name, p.Name)
				require.Equal(t, fakes[i].url, p.URL)
				require.Equal(t, api, p.API)
				require.Equal(t, providerTimeout, p.Timeout)
			}
			if api == dialect.Stripe {
				require.Equal(t, fakeprovider.StripeTestKey, providers[1].StripeAPIKey)
				require.Equal(t, time.Duration(0), providers[1].StripeLookupDelay, "the fake's search reads its books at once")
			}
			route, err := table.Route(1, chargeonce.Money{Minor: 100, Currency: "TRY"})
			require.NoError(t, err)
			require.Equal(t, []string{chargeonce.DefaultProvider, stack.BackupName}, route.Providers)
		})
	}
}
