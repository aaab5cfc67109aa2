// Package backend connects a chargeonce process to what it runs on: the
// Temporal service, with every workflow payload encrypted, and the merchant
// database. The worker and API commands and the one-process dev stack
// connect through Connect, so that each of them encrypts, counts and checks
// the same way.
package backend

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/internal/codec"
	"chargeonce/internal/metrics"
	"chargeonce/internal/temporalclient"
	"chargeonce/store"
	"chargeonce/workflows"
)

// Config says where the backend is and what the process reports to.
type Config struct {
	// Temporal is where Temporal is and how to reach it, with its
	// Namespace set, as temporalclient.Flags.Resolve sets it.
	Temporal temporalclient.Config
	// DatabaseURL is the merchant database, as store.Open takes it.
	DatabaseURL string
	// Keyring encrypts and decrypts the workflow payloads.
	Keyring *codec.Keyring
	// CardHasher computes the keyed card hashes; Connect re-keys the
	// legacy hashes in the database with it.
	CardHasher chargeonce.CardHasher
	// Registry receives the Temporal SDK's metrics and the gauges of open
	// attempts, and the process serves it at /metrics.
	Registry *prometheus.Registry
	// Logger is the process's logger.
	Logger *slog.Logger
}

// Conn is a process's connected backend, with the registry and the logger
// that the parts built on it report to.
type Conn struct {
	Temporal client.Client
	// Namespace is the Temporal namespace that Temporal is connected to.
	Namespace string
	Store     store.Store
	Keyring   *codec.Keyring
	// CardHasher computes the keyed card hashes the database keeps.
	CardHasher chargeonce.CardHasher
	Registry   *prometheus.Registry
	Logger     *slog.Logger
}

// Close closes the Temporal client and the database.
func (c *Conn) Close() error {
	c.Temporal.Close()
	return c.Store.Close()
}

// Connect opens the database (applying its migrations, and re-keying the
// card hashes stored before they were keyed), registers the
// gauges of open attempts and open refunds, connects to Temporal with payload encryption and
// the SDK's metrics, and checks that the namespace has the payment's search
// attributes: a namespace without them would refuse every workflow start,
// so it is better said now, by name.
func Connect(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Temporal.Namespace == "" || cfg.Keyring == nil || !cfg.CardHasher.Valid() || cfg.Registry == nil || cfg.Logger == nil {
		return nil, errors.New("backend: a Temporal namespace, a keyring, a card hasher, a registry and a logger are required")
	}
	sdkMetrics, err := metrics.TemporalHandler(cfg.Registry, cfg.Logger)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	// Before anything serves: a checkout's keyed hash must find the stored
	// hash of the same card keyed too.
	rekeyed, err := st.RekeyCardHashes(ctx, cfg.CardHasher.Rekey)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if rekeyed > 0 {
		cfg.Logger.Info("card hashes re-keyed", "attempts", rekeyed)
	}
	if err := metrics.RegisterOpenAttempts(cfg.Registry, st, cfg.Logger); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := metrics.RegisterOpenRefunds(cfg.Registry, st, cfg.Logger); err != nil {
		_ = st.Close()
		return nil, err
	}
	tc, err := temporalclient.Dial(ctx, cfg.Temporal, temporalclient.Options{
		DataConverter:  codec.NewDataConverter(cfg.Keyring),
		MetricsHandler: sdkMetrics,
		Logger:         cfg.Logger,
	})
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := temporalclient.RequireSearchAttributes(ctx, tc, cfg.Temporal.Namespace, workflows.SearchAttributes()); err != nil {
		tc.Close()
		_ = st.Close()
		return nil, err
	}
	return &Conn{Temporal: tc, Namespace: cfg.Temporal.Namespace, Store: st, Keyring: cfg.Keyring, CardHasher: cfg.CardHasher, Registry: cfg.Registry, Logger: cfg.Logger}, nil
}
