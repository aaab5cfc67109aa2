package cli

import (
	"context"
	"errors"
	"flag"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"chargeonce"
	"chargeonce/internal/backend"
	"chargeonce/internal/codec"
	"chargeonce/internal/temporalclient"
)

// BackendFlags say where the worker and the API find Temporal and the
// merchant database, and which keys encrypt workflow payloads.
type BackendFlags struct {
	temporal    *temporalclient.Flags
	databaseURL *string
	codecKeys   string
	cardHashKey string
}

// DatabaseURL defines --database-url, the merchant database, on fs.
func DatabaseURL(fs *flag.FlagSet) *string {
	return fs.String("database-url", "", "merchant database: postgres://user:pass@host/db or sqlite:/path/file.db")
}

// Backend defines the backend flags on fs.
func Backend(fs *flag.FlagSet) *BackendFlags {
	b := &BackendFlags{temporal: temporalclient.RegisterFlags(fs), databaseURL: DatabaseURL(fs)}
	fs.StringVar(&b.codecKeys, "codec-keys", "", "payload encryption `keyring`: id:base64key,… with the current key first (32-byte AES-256 keys)")
	fs.StringVar(&b.cardHashKey, "card-hash-key", "", "secret `key` of the card hashes the database keeps: base64 of 32 random bytes, the same for every worker and API; keep it with the payload keys")
	return b
}

// Connect checks the flags, resolves the Temporal connection against
// Temporal's environment configuration read through getenv, and connects
// the process's backend (backend.Connect), whose metrics go to reg.
// Flag problems are UsageErrors.
func (b *BackendFlags) Connect(ctx context.Context, getenv func(string) string, logger *slog.Logger, reg *prometheus.Registry) (*backend.Conn, error) {
	if *b.databaseURL == "" {
		return nil, UsageError{errors.New("--database-url is required")}
	}
	if b.codecKeys == "" {
		return nil, UsageError{errors.New("--codec-keys is required: without it card tokens would reach Temporal in clear text")}
	}
	if b.cardHashKey == "" {
		return nil, UsageError{errors.New("--card-hash-key is required: without it card hashes could be reversed by trying tokens")}
	}
	hasher, err := chargeonce.ParseCardHashKey(b.cardHashKey)
	if err != nil {
		return nil, UsageError{err}
	}
	temporal, err := b.temporal.Resolve(getenv)
	if err != nil {
		return nil, UsageError{err}
	}
	keyring, err := codec.ParseKeyring(b.codecKeys)
	if err != nil {
		return nil, UsageError{err}
	}
	return backend.Connect(ctx, backend.Config{Temporal: temporal, DatabaseURL: *b.databaseURL, Keyring: keyring, CardHasher: hasher, Registry: reg, Logger: logger})
}
