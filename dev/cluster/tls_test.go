package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
)

// Every certificate is issued by the one CA, for its use, in files that
// only their owner reads.
func TestIssueCertificates_OneCASignsTheServerAndEveryClient(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	probe, err := issueCertificates(l)
	require.NoError(t, err)

	info, err := os.Stat(l.TLS())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), l.TLS())
	files := []string{l.CAFile(), l.CertFile(ServiceTemporal), l.KeyFile(ServiceTemporal)}
	for _, name := range tlsClients {
		files = append(files, l.CertFile(name), l.KeyFile(name))
	}
	for _, f := range files {
		info, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), f)
	}

	verify := func(name string, usage x509.ExtKeyUsage, host string) {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(l.CertFile(name), l.KeyFile(name))
		require.NoError(t, err, name)
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: probe.RootCAs, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host})
		require.NoError(t, err, "%s for %v at %q", name, usage, host)
	}
	for _, host := range []string{TemporalServerName, Host, "localhost"} {
		verify(ServiceTemporal, x509.ExtKeyUsageServerAuth, host)
	}
	// The server's services present its certificate when they call each
	// other and the frontend.
	verify(ServiceTemporal, x509.ExtKeyUsageClientAuth, "")
	for _, name := range tlsClients {
		verify(name, x509.ExtKeyUsageClientAuth, "")
	}

	// A second start issues from a new CA: the old certificates no longer
	// verify.
	again, err := issueCertificates(l)
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(l.CertFile(ServiceWorker), l.KeyFile(ServiceWorker))
	require.NoError(t, err)
	_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: probe.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.Error(t, err)
	_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: again.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}

// Every part that calls the frontend does so with its own certificate, and
// the server takes no client without one.
func TestParts_ReachTheFrontendOverMutualTLS(t *testing.T) {
	l := Layout{Dir: "/data"}
	clients := map[string]string{}
	for _, part := range Parts(DefaultPorts(), l, Secrets{}) {
		env := replicaEnv(part, DefaultPorts(), 0)
		switch part.Service {
		case ServiceTemporal:
			require.Equal(t, "true", env["TEMPORAL_TLS_REQUIRE_CLIENT_AUTH"])
			require.Equal(t, l.CAFile(), env["TEMPORAL_TLS_CLIENT1_CA_CERT"])
			require.Equal(t, l.CertFile(ServiceTemporal), env["TEMPORAL_TLS_FRONTEND_CERT"])
		case ServiceTemporalUI:
			clients[part.Service] = env["TEMPORAL_TLS_CERT"]
			require.Equal(t, l.CAFile(), env["TEMPORAL_TLS_CA"])
			require.Equal(t, TemporalServerName, env["TEMPORAL_TLS_SERVER_NAME"])
		case ServiceTemporalSetup, ServiceWorker, ServiceAPI:
			clients[part.Service] = env[cli.EnvName("temporal-tls-cert")]
			require.Equal(t, l.KeyFile(part.Service), env[cli.EnvName("temporal-tls-key")], part.Service)
			require.Equal(t, l.CAFile(), env[cli.EnvName("temporal-tls-ca")], part.Service)
			require.Equal(t, TemporalServerName, env[cli.EnvName("temporal-tls-server-name")], part.Service)
		}
	}
	want := map[string]string{}
	for _, name := range tlsClients {
		if name != ToolsClient {
			want[name] = l.CertFile(name)
		}
	}
	require.Equal(t, want, clients)
}
