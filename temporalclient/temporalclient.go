// Package temporalclient connects the worker and the checkout API to any
// Temporal service: the embedded dev server, a self-hosted cluster or
// Temporal Cloud, with TLS, an API key, and payload encryption.
package temporalclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
)

// Config says where Temporal is and how to reach it.
type Config struct {
	// Address is the frontend's host:port.
	Address string
	// Namespace is the Temporal namespace of the payment workflows.
	Namespace string
	// TLSCert and TLSKey are a client certificate for mutual TLS.
	TLSCert, TLSKey string
	// TLSCA is a PEM file of the CAs that sign the server's certificate;
	// empty means the system roots.
	TLSCA string
	// TLSServerName overrides the name checked in the server's certificate.
	TLSServerName string
	// APIKey authenticates to Temporal Cloud or a server that takes keys.
	// Keys are only ever sent over TLS.
	APIKey string
}

// RegisterFlags defines the connection flags on fs and returns the Config
// they fill, so that every command names them the same way.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.Address, "temporal-address", "localhost:7233", "Temporal frontend `host:port`")
	fs.StringVar(&c.Namespace, "temporal-namespace", "default", "Temporal `namespace` of the payment workflows")
	fs.StringVar(&c.TLSCert, "temporal-tls-cert", "", "client certificate `file` (PEM) for mutual TLS")
	fs.StringVar(&c.TLSKey, "temporal-tls-key", "", "client key `file` (PEM) for mutual TLS")
	fs.StringVar(&c.TLSCA, "temporal-tls-ca", "", "CA `file` (PEM) that signs the server's certificate; default: system roots")
	fs.StringVar(&c.TLSServerName, "temporal-tls-server-name", "", "server `name` expected in the server's certificate")
	fs.StringVar(&c.APIKey, "temporal-api-key", "", "API `key` for Temporal Cloud; turns TLS on")
	return c
}

// Validate checks the configuration without connecting.
func (c Config) Validate() error {
	switch {
	case c.Address == "":
		return errors.New("temporal address is empty")
	case c.Namespace == "":
		return errors.New("temporal namespace is empty")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("temporal TLS: give both the client certificate and its key, or neither")
	}
	return nil
}

func (c Config) tlsEnabled() bool {
	return c.TLSCert != "" || c.TLSCA != "" || c.TLSServerName != "" || c.APIKey != ""
}

func (c Config) tlsConfig() (*tls.Config, error) {
	if !c.tlsEnabled() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.TLSServerName}
	if c.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("temporal TLS: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal TLS: %s holds no PEM certificate", c.TLSCA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Options are the process-wide parts every client of one process shares.
type Options struct {
	// DataConverter encrypts payloads; required, so that no card token
	// reaches Temporal in clear text by accident.
	DataConverter converter.DataConverter
	// MetricsHandler receives the SDK's metrics; nil drops them.
	MetricsHandler client.MetricsHandler
	// Logger is the process's logger. What workflow and activity code logs
	// through workflow.GetLogger and activity.GetLogger passes at its level;
	// the SDK's own lines pass only from warn up.
	Logger *slog.Logger
}

// compression is the gRPC compression for a server at address: none over
// loopback, where it costs CPU and saves nothing, and the SDK's gzip
// elsewhere.
func compression(address string) client.GrpcCompression {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &client.GrpcCompressionGzip{}
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return &client.GrpcCompressionNone{}
	}
	return &client.GrpcCompressionGzip{}
}

// Dial connects to Temporal and checks that the server answers.
func Dial(ctx context.Context, c Config, o Options) (client.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if o.DataConverter == nil {
		return nil, errors.New("temporal client: a data converter that encrypts payloads is required")
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	opts := client.Options{
		HostPort:          c.Address,
		Namespace:         c.Namespace,
		DataConverter:     o.DataConverter,
		MetricsHandler:    o.MetricsHandler,
		ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg, GrpcCompression: compression(c.Address)},
	}
	if o.Logger != nil {
		opts.Logger = sdkLogger(o.Logger)
		opts.Interceptors = []interceptor.ClientInterceptor{&ownLoggers{}}
	}
	if c.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.APIKey)
	}
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %q): %w", c.Address, c.Namespace, err)
	}
	return cl, nil
}
