package cluster

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"chargeonce/dev/devcert"
	"chargeonce/internal/cli"
	"chargeonce/internal/temporalclient"
)

// The Temporal frontend takes mutual TLS only: every client presents a
// certificate signed by the cluster's CA, and checks that the server's
// certificate is the CA's, for TemporalServerName. The server's own
// services call each other with the server's certificate too. The CA, the
// server's certificate and one client certificate for each client are
// issued at every start into Layout.TLS(); the CA's key is never written.

// TemporalServerName is the name in the Temporal server's certificate that
// its clients check, as compose names the service.
const TemporalServerName = ServiceTemporal

// ToolsClient names the client certificate of what reaches the frontend
// from outside the parts: the cluster's own readiness probe, and the
// checker and benchmarks that read the workflows.
const ToolsClient = "tools"

// tlsClients are the names of the client certificates: the parts that
// reach the frontend, and the tools.
var tlsClients = []string{ServiceTemporalSetup, ServiceTemporalUI, ServiceWorker, ServiceAPI, ToolsClient}

// TLS is where the cluster keeps its certificates and their keys.
func (l Layout) TLS() string { return filepath.Join(l.Dir, "tls") }

// CAFile is the CA's certificate, which every part trusts.
func (l Layout) CAFile() string { return filepath.Join(l.TLS(), "ca.pem") }

// CertFile is the certificate of name: the Temporal server
// (ServiceTemporal) or a client of its frontend (a service, or ToolsClient).
func (l Layout) CertFile(name string) string { return filepath.Join(l.TLS(), name+".pem") }

// KeyFile is the private key of CertFile(name).
func (l Layout) KeyFile(name string) string { return filepath.Join(l.TLS(), name+"-key.pem") }

// TemporalClient is how a client reaches the frontend with the certificate
// of name.
func (l Layout) TemporalClient(address, name string) temporalclient.Config {
	return temporalclient.Config{
		Address: address, Namespace: Namespace,
		TLSCert: l.CertFile(name), TLSKey: l.KeyFile(name), TLSCA: l.CAFile(), TLSServerName: TemporalServerName,
	}
}

// issueCertificates makes a new CA and issues the server's and the clients'
// certificates into the TLS directory, mode 0600 in a 0700 directory, and
// returns the tools' client configuration for the probes.
func issueCertificates(l Layout) (*tls.Config, error) {
	if err := os.MkdirAll(l.TLS(), 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := os.Chmod(l.TLS(), 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ca, err := devcert.NewCA("chargeonce cluster CA")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := devcert.WriteFile(l.CAFile(), ca.CertPEM()); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	server, err := ca.Server(TemporalServerName, TemporalServerName, "localhost", Host)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := server.Write(l.CertFile(ServiceTemporal), l.KeyFile(ServiceTemporal)); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var tools tls.Certificate
	for _, name := range tlsClients {
		pair, err := ca.Client(name)
		if err == nil {
			err = pair.Write(l.CertFile(name), l.KeyFile(name))
		}
		if err == nil && name == ToolsClient {
			tools, err = tls.X509KeyPair(pair.Cert, pair.Key)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	return &tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{tools},
		ServerName: TemporalServerName, MinVersion: tls.VersionTLS12,
	}, nil
}

// serverTLSEnv configures the Temporal server through the variables of its
// configuration template: mutual TLS on the frontend and between its own
// services, with one certificate, and clients of the cluster's CA alone.
func serverTLSEnv(l Layout) map[string]string {
	ca, cert, key := l.CAFile(), l.CertFile(ServiceTemporal), l.KeyFile(ServiceTemporal)
	return map[string]string{
		"TEMPORAL_TLS_REQUIRE_CLIENT_AUTH": "true",
		"TEMPORAL_TLS_FRONTEND_CERT":       cert, "TEMPORAL_TLS_FRONTEND_KEY": key,
		// The template lists both client CA files once the first is set,
		// and the server refuses an empty one.
		"TEMPORAL_TLS_CLIENT1_CA_CERT": ca, "TEMPORAL_TLS_CLIENT2_CA_CERT": ca,
		// The server's CA turns on TLS for the server's own calls to its
		// frontend and between its services, which then need a certificate
		// of their own.
		"TEMPORAL_TLS_SERVER_CA_CERT": ca, "TEMPORAL_TLS_SERVER_CERT": cert, "TEMPORAL_TLS_SERVER_KEY": key,
		"TEMPORAL_TLS_FRONTEND_SERVER_NAME": TemporalServerName, "TEMPORAL_TLS_INTERNODE_SERVER_NAME": TemporalServerName,
	}
}

// uiTLSEnv configures the Web UI's client (its configuration's tls section).
func uiTLSEnv(l Layout) map[string]string {
	return map[string]string{
		"TEMPORAL_TLS_CA": l.CAFile(), "TEMPORAL_TLS_CERT": l.CertFile(ServiceTemporalUI), "TEMPORAL_TLS_KEY": l.KeyFile(ServiceTemporalUI),
		"TEMPORAL_TLS_SERVER_NAME": TemporalServerName, "TEMPORAL_TLS_ENABLE_HOST_VERIFICATION": "true",
	}
}

// clientTLSEnv gives a chargeonce command (worker, api, temporal-setup) the
// client certificate of service through its --temporal-tls-* flags.
func clientTLSEnv(l Layout, service string) map[string]string {
	return map[string]string{
		cli.EnvName("temporal-tls-cert"): l.CertFile(service), cli.EnvName("temporal-tls-key"): l.KeyFile(service),
		cli.EnvName("temporal-tls-ca"): l.CAFile(), cli.EnvName("temporal-tls-server-name"): TemporalServerName,
	}
}
