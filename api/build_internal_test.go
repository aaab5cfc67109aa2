package api

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/backend"
	"chargeonce/internal/syncbuf"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
	"chargeonce/store"
)

// The API refuses a routing that names a provider the workers do not
// reach, and checks nothing before a worker has published its providers.
func TestCheckWorkersReach_RefusesAProviderNoWorkerReaches(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	logs := &syncbuf.Buffer{}
	b := &backend.Conn{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	named := func(name string) routing.Provider { return routing.Provider{Settings: dialect.Settings{Name: name}} }
	both := routing.Of(named("default"), named("backup"))

	require.NoError(t, checkWorkersReach(t.Context(), b, both), "no worker has published yet")
	require.Contains(t, logs.String(), "the routing is not checked against the providers the payment workers reach")

	require.NoError(t, st.PublishProviders(t.Context(), []string{"default"}))
	require.EqualError(t, checkWorkersReach(t.Context(), b, both),
		`api: the routing sends payments to provider "backup", which the payment workers do not reach (they reach default): give the workers and the API the same routing file`)
	require.NoError(t, checkWorkersReach(t.Context(), b, routing.Of(named("default"))))

	require.NoError(t, st.PublishProviders(t.Context(), []string{"backup", "default"}))
	require.NoError(t, checkWorkersReach(t.Context(), b, both))
}
