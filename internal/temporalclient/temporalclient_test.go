package temporalclient

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"chargeonce/internal/envflag"
)

func TestCompression_NoneOverLoopbackGzipElsewhere(t *testing.T) {
	for address, want := range map[string]client.GrpcCompression{
		"127.0.0.1:7233":                &client.GrpcCompressionNone{},
		"[::1]:7233":                    &client.GrpcCompressionNone{},
		"localhost:7233":                &client.GrpcCompressionNone{},
		"temporal:7233":                 &client.GrpcCompressionGzip{},
		"10.0.0.7:7233":                 &client.GrpcCompressionGzip{},
		"ns.tmprl.cloud:7233":           &client.GrpcCompressionGzip{},
		"no-port-so-not-parsed-as-host": &client.GrpcCompressionGzip{},
	} {
		require.IsType(t, want, compression(address), address)
	}
}

// resolve parses args into the connection flags, as a command does, and
// resolves them against the environment env.
func resolve(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := RegisterFlags(fs)
	getenv := func(name string) string { return env[name] }
	require.NoError(t, envflag.Parse(fs, args, "CHARGEONCE", getenv))
	return f.Resolve(getenv)
}

func TestResolve_ChargeonceSettingsWinOverTemporalsEnvironment(t *testing.T) {
	profiles := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(profiles, []byte(`
[profile.default]
address = "file-default:7233"
namespace = "file-ns"

[profile.cloud]
address = "payments.a1b2c.tmprl.cloud:7233"
namespace = "payments.a1b2c"
api_key = "file-key"
`), 0o600))
	noFile := filepath.Join(t.TempDir(), "absent.toml")

	for _, tc := range []struct {
		name        string
		args        []string
		env         map[string]string
		address, ns string
		tls, apiKey bool
	}{
		{name: "nothing set: the defaults", env: map[string]string{"TEMPORAL_CONFIG_FILE": noFile},
			address: "localhost:7233", ns: "default"},
		{name: "Temporal's variables", env: map[string]string{"TEMPORAL_CONFIG_FILE": noFile,
			"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			address: "env:7233", ns: "env-ns"},
		{name: "the default profile of the file", env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles},
			address: "file-default:7233", ns: "file-ns"},
		{name: "a named profile with an API key turns TLS on", env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_PROFILE": "cloud"},
			address: "payments.a1b2c.tmprl.cloud:7233", ns: "payments.a1b2c", tls: true, apiKey: true},
		{name: "Temporal's variables win over the file", env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_ADDRESS": "env:7233"},
			address: "env:7233", ns: "file-ns"},
		{name: "CHARGEONCE_ variables win over Temporal's", env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles,
			"TEMPORAL_ADDRESS": "env:7233", "CHARGEONCE_TEMPORAL_ADDRESS": "ours:7233", "CHARGEONCE_TEMPORAL_NAMESPACE": "ours-ns"},
			address: "ours:7233", ns: "ours-ns"},
		{name: "flags win over everything", args: []string{"--temporal-address", "flag:7233", "--temporal-namespace", "flag-ns"},
			env:     map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_ADDRESS": "env:7233", "CHARGEONCE_TEMPORAL_ADDRESS": "ours:7233"},
			address: "flag:7233", ns: "flag-ns"},
		{name: "TEMPORAL_API_KEY turns TLS on", env: map[string]string{"TEMPORAL_CONFIG_FILE": noFile, "TEMPORAL_API_KEY": "k"},
			address: "localhost:7233", ns: "default", tls: true, apiKey: true},
		{name: "TEMPORAL_TLS=false keeps an API key in plain text", env: map[string]string{"TEMPORAL_CONFIG_FILE": noFile, "TEMPORAL_API_KEY": "k", "TEMPORAL_TLS": "false"},
			address: "localhost:7233", ns: "default", apiKey: true},
		{name: "a TLS flag turns TLS on over TEMPORAL_TLS=false", args: []string{"--temporal-tls-server-name", "temporal.internal"},
			env:     map[string]string{"TEMPORAL_CONFIG_FILE": noFile, "TEMPORAL_TLS": "false"},
			address: "localhost:7233", ns: "default", tls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := resolve(t, tc.args, tc.env)
			require.NoError(t, err)
			opts, err := c.clientOptions()
			require.NoError(t, err)

			require.Equal(t, tc.address, opts.HostPort)
			require.Equal(t, tc.ns, opts.Namespace)
			require.Equal(t, tc.ns, c.Namespace, "the namespace the search attributes are checked in")
			require.Equal(t, tc.tls, opts.ConnectionOptions.TLS != nil && !opts.ConnectionOptions.TLSDisabled, "TLS")
			require.Equal(t, tc.apiKey, opts.Credentials != nil, "API key")
		})
	}
}

func TestResolve_BadEnvironmentIsRefusedByName(t *testing.T) {
	profiles := filepath.Join(t.TempDir(), "temporal.toml")
	require.NoError(t, os.WriteFile(profiles, []byte("[profile.default]\naddress = \"a:7233\"\n"), 0o600))
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"unknown profile": {env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_PROFILE": "staging"},
			want: "unable to find profile staging"},
		"missing CA file": {env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": "/nonexistent/ca.pem"},
			want: "server CA"},
		"certificate without key": {args: []string{"--temporal-tls-cert", "c.pem"}, env: map[string]string{"TEMPORAL_CONFIG_FILE": profiles},
			want: "give both the client certificate and its key"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := resolve(t, tc.args, tc.env)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
