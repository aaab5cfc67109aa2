package chaos_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/verify/chaos"
)

func TestConfig_ValidateRefusesWhatCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*chaos.Config)
		want   string
	}{
		{"a zero config", func(c *chaos.Config) { *c = chaos.Config{} }, "checkouts (0) and clients (0) must be positive; DefaultConfig sizes a CI run"},
		{"negative PostgreSQL restarts", func(c *chaos.Config) { c.PostgresRestarts = -1 }, "fault counts must not be negative"},
		{"a database that is not PostgreSQL", func(c *chaos.Config) { c.DatabaseURL = "sqlite:/tmp/x.db" }, "the database URL must start with postgres:// or postgresql://"},
		{"PostgreSQL restarts on SQLite", func(c *chaos.Config) { c.PostgresRestarts = 1 }, "PostgreSQL restarts need a PostgreSQL database URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := chaos.DefaultConfig()
			tc.change(&cfg)
			require.ErrorContains(t, cfg.Validate(), tc.want)
		})
	}
}

func TestConfig_ValidateAcceptsTheDefaultsAndAPostgreSQLRun(t *testing.T) {
	require.NoError(t, chaos.DefaultConfig().Validate())
	cfg := chaos.DefaultConfig()
	cfg.DatabaseURL, cfg.PostgresRestarts, cfg.ServerRestarts = "postgresql://u:p@127.0.0.1:5432/db", 2, 0
	require.NoError(t, cfg.Validate())
}
