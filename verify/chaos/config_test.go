package chaos_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/temporalclient"
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

// A run drives and checks every provider that the stack routes payments
// to: a run with a backup needs a stack that has one, and a stack with one
// needs a run with a backup. Neither reaches the stack.
func TestRunExternal_RefusesABackupOnOneSideOnly(t *testing.T) {
	ext := chaos.External{APIURLs: []string{"http://127.0.0.1:1"}, ProviderURL: "http://127.0.0.1:2",
		Temporal: temporalclient.Config{Address: "127.0.0.1:3"}, DatabaseURL: "postgres://127.0.0.1:4/db",
		CodecKeys: "k", CardHashKey: "h", APIKey: "a"}
	for _, tc := range []struct {
		name      string
		backup    bool
		backupURL string
	}{
		{"a run with a backup", true, ""},
		{"a stack with a backup", false, "http://127.0.0.1:5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := chaos.DefaultConfig()
			cfg.Backup, cfg.PostgresRestarts = tc.backup, 0
			ext := ext
			ext.BackupURL = tc.backupURL
			_, err := chaos.RunExternal(t.Context(), cfg, ext)
			require.ErrorContains(t, err, "Config.Backup and an external stack's backup provider (External.BackupURL) go together")
		})
	}
}
