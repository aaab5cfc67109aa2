package checkout_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"chargeonce/checkout"
	"chargeonce/store"
	"chargeonce/workflows"
)

// offline returns a store on a fresh SQLite file and a Temporal client that
// never dials: nothing listens on port 1, so a test that reached Temporal
// would fail.
func offline(t *testing.T) (store.Store, client.Client) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	return st, temporal
}

func TestNew_RefusesABadConfigWithAClearError(t *testing.T) {
	st, temporal := offline(t)

	badTiming := workflows.DefaultTiming()
	badTiming.AttemptTimeout = badTiming.ChargeBudget + time.Second

	tests := []struct {
		name string
		cfg  checkout.Config
		want string
	}{
		{"no store", checkout.Config{Temporal: temporal}, "Store is required"},
		{"no Temporal client", checkout.Config{Store: st}, "Temporal client is required"},
		{"negative budget", checkout.Config{Store: st, Temporal: temporal, Budget: -time.Second}, "budget -1s is negative"},
		{"inconsistent timing", checkout.Config{Store: st, Temporal: temporal, Timing: badTiming}, "AttemptTimeout 11s exceeds ChargeBudget 10s"},
		{"upper-case reference prefix", checkout.Config{Store: st, Temporal: temporal, ReferencePrefix: "Shop"}, `reference prefix "Shop"`},
		{"reference prefix with a dash", checkout.Config{Store: st, Temporal: temporal, ReferencePrefix: "book-store"}, `reference prefix "book-store"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := checkout.New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, svc)
		})
	}

	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal})
	require.NoError(t, err, "the zero values of the optional fields are the defaults")
	require.NotNil(t, svc)
}

func TestCheckout_UnknownOrderIsErrNotFoundAndReachesNoWorkflow(t *testing.T) {
	st, temporal := offline(t)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal})
	require.NoError(t, err)

	_, err = svc.Checkout(context.Background(), 424242, "tok_visa")
	require.ErrorIs(t, err, checkout.ErrNotFound)
	require.ErrorIs(t, err, store.ErrNotFound)
}
