package cli

import (
	"context"
	"errors"
	"flag"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"chargeonce/internal/codec"
	"chargeonce/internal/metrics"
	"chargeonce/internal/temporalclient"
	"chargeonce/store"
	"chargeonce/workflows"
)

// BackendFlags say where the worker and the API find Temporal and the
// merchant database, and which keys encrypt workflow payloads.
type BackendFlags struct {
	temporal    *temporalclient.Flags
	databaseURL string
	codecKeys   string
}

// Backend defines the backend flags on fs.
func Backend(fs *flag.FlagSet) *BackendFlags {
	b := &BackendFlags{temporal: temporalclient.RegisterFlags(fs)}
	fs.StringVar(&b.databaseURL, "database-url", "", "merchant database: postgres://user:pass@host/db or sqlite:/path/file.db")
	fs.StringVar(&b.codecKeys, "codec-keys", "", "payload encryption `keyring`: id:base64key,… with the current key first (32-byte AES-256 keys)")
	return b
}

// BackendConn is the connected backend of a process.
type BackendConn struct {
	Temporal client.Client
	// Namespace is the Temporal namespace that Temporal is connected to.
	Namespace string
	Store     store.Store
	Keyring   *codec.Keyring
}

// Close closes the Temporal client and the database.
func (c *BackendConn) Close() error {
	c.Temporal.Close()
	return c.Store.Close()
}

// Connect checks the flags, resolves the Temporal connection against
// Temporal's environment configuration read through getenv, opens the database (applying its migrations),
// connects to Temporal with payload encryption, and checks that the
// namespace has the payment's search attributes. reg receives the SDK's
// metrics and the gauges of open attempts.
// Flag problems are UsageErrors.
func (b *BackendFlags) Connect(ctx context.Context, getenv func(string) string, logger *slog.Logger, reg prometheus.Registerer) (*BackendConn, error) {
	if b.databaseURL == "" {
		return nil, UsageError{errors.New("--database-url is required")}
	}
	if b.codecKeys == "" {
		return nil, UsageError{errors.New("--codec-keys is required: without it card tokens would reach Temporal in clear text")}
	}
	temporal, err := b.temporal.Resolve(getenv)
	if err != nil {
		return nil, UsageError{err}
	}
	keyring, err := codec.ParseKeyring(b.codecKeys)
	if err != nil {
		return nil, UsageError{err}
	}
	sdkMetrics, err := metrics.TemporalHandler(reg, logger)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, b.databaseURL)
	if err != nil {
		return nil, err
	}
	if err := metrics.RegisterOpenAttempts(reg, st, logger); err != nil {
		_ = st.Close()
		return nil, err
	}
	tc, err := temporalclient.Dial(ctx, temporal, temporalclient.Options{
		DataConverter:  codec.NewDataConverter(keyring),
		MetricsHandler: sdkMetrics,
		Logger:         logger,
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	// A namespace without the payment's search attributes would refuse
	// every workflow start: better to say so now, by name.
	if err := temporalclient.RequireSearchAttributes(ctx, tc, temporal.Namespace, workflows.SearchAttributes()); err != nil {
		tc.Close()
		_ = st.Close()
		return nil, err
	}
	return &BackendConn{Temporal: tc, Namespace: temporal.Namespace, Store: st, Keyring: keyring}, nil
}
