// Package temporalclient connects the worker and the checkout API to any
// Temporal service: the embedded dev server, a self-hosted cluster or
// Temporal Cloud, with TLS, an API key, and payload encryption. It reads
// Temporal's own environment configuration (TEMPORAL_ADDRESS, a profile
// file, …), over which chargeonce's flags and CHARGEONCE_ variables win.
package temporalclient

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"

	"chargeonce/internal/envflag"
)

// Defaults for what neither the flags nor Temporal's environment
// configuration give.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
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
	// A key turns TLS on unless the environment turns it off explicitly.
	APIKey string
	// Environment is Temporal's environment configuration: the profile
	// file and the TEMPORAL_* variables that every Temporal SDK and CLI
	// read. Every non-empty field above wins over it.
	Environment envconfig.ClientConfigProfile
}

// Flags are the connection flags of a command.
type Flags struct {
	fs *flag.FlagSet
	c  Config
}

// RegisterFlags defines the connection flags on fs, so that every command
// names them the same way. Resolve them after parsing.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	fs.StringVar(&f.c.Address, "temporal-address", DefaultAddress, "Temporal frontend `host:port`; overrides TEMPORAL_ADDRESS")
	fs.StringVar(&f.c.Namespace, "temporal-namespace", DefaultNamespace, "Temporal `namespace` of the payment workflows; overrides TEMPORAL_NAMESPACE")
	fs.StringVar(&f.c.TLSCert, "temporal-tls-cert", "", "client certificate `file` (PEM) for mutual TLS; overrides TEMPORAL_TLS_CLIENT_CERT_PATH")
	fs.StringVar(&f.c.TLSKey, "temporal-tls-key", "", "client key `file` (PEM) for mutual TLS; overrides TEMPORAL_TLS_CLIENT_KEY_PATH")
	fs.StringVar(&f.c.TLSCA, "temporal-tls-ca", "", "CA `file` (PEM) that signs the server's certificate (default: system roots); overrides TEMPORAL_TLS_SERVER_CA_CERT_PATH")
	fs.StringVar(&f.c.TLSServerName, "temporal-tls-server-name", "", "server `name` expected in the server's certificate; overrides TEMPORAL_TLS_SERVER_NAME")
	fs.StringVar(&f.c.APIKey, "temporal-api-key", "", "API `key` for Temporal Cloud; turns TLS on; overrides TEMPORAL_API_KEY")
	return f
}

// Resolve reads Temporal's environment configuration through getenv
// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
// and the profile TEMPORAL_PROFILE names in the file TEMPORAL_CONFIG_FILE
// names, or in the default temporal.toml) and lays the given flags over it.
// Call it after parsing. TEMPORAL_GRPC_META_* variables are not read, as
// getenv cannot list them; a profile's grpc_meta is.
func (f *Flags) Resolve(getenv func(string) string) (Config, error) {
	env, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{EnvLookup: lookup(getenv)})
	if err != nil {
		return Config{}, fmt.Errorf("temporal environment configuration: %w", err)
	}
	c := f.c
	c.Environment = env
	// The address and the namespace have defaults, which give way to the
	// environment; a flag that was given, on the command line or as a
	// CHARGEONCE_ variable, wins over it.
	if !envflag.AnyGiven(f.fs, "temporal-address") {
		c.Address = cmp.Or(env.Address, DefaultAddress)
	}
	if !envflag.AnyGiven(f.fs, "temporal-namespace") {
		c.Namespace = cmp.Or(env.Namespace, DefaultNamespace)
	}
	return c, c.Validate()
}

// lookup reads Temporal's variables through getenv, where an empty
// variable is an unset one, as for the CHARGEONCE_ variables.
type lookup func(string) string

func (l lookup) LookupEnv(name string) (string, bool) {
	v := l(name)
	return v, v != ""
}

func (lookup) Environ() []string { return nil }

// profile is what Dial connects with: the environment configuration with
// the fields of c laid over it, and the defaults for what neither gives.
func (c Config) profile() envconfig.ClientConfigProfile {
	p := c.Environment
	p.Address = cmp.Or(c.Address, p.Address, DefaultAddress)
	p.Namespace = cmp.Or(c.Namespace, p.Namespace, DefaultNamespace)
	p.APIKey = cmp.Or(c.APIKey, p.APIKey)
	if c.TLSCert == "" && c.TLSKey == "" && c.TLSCA == "" && c.TLSServerName == "" {
		return p
	}
	// A TLS flag turns TLS on, and a file given by flag replaces the
	// environment's file or inline data for the same part.
	t := envconfig.ClientConfigTLS{}
	if p.TLS != nil {
		t = *p.TLS
	}
	t.Disabled = false
	if c.TLSCert != "" || c.TLSKey != "" {
		t.ClientCertPath, t.ClientKeyPath, t.ClientCertData, t.ClientKeyData = c.TLSCert, c.TLSKey, nil, nil
	}
	if c.TLSCA != "" {
		t.ServerCACertPath, t.ServerCACertData = c.TLSCA, nil
	}
	t.ServerName = cmp.Or(c.TLSServerName, t.ServerName)
	p.TLS = &t
	return p
}

// Validate checks the configuration without connecting.
func (c Config) Validate() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("temporal TLS: give both the client certificate and its key, or neither")
	}
	if _, err := c.clientOptions(); err != nil {
		return err
	}
	return nil
}

// clientOptions are the SDK's connection options for c.
func (c Config) clientOptions() (client.Options, error) {
	p := c.profile()
	opts, err := p.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal: %w", err)
	}
	return opts, nil
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
	opts, err := c.clientOptions()
	if err != nil {
		return nil, err
	}
	opts.DataConverter = o.DataConverter
	opts.MetricsHandler = o.MetricsHandler
	opts.ConnectionOptions.GrpcCompression = compression(opts.HostPort)
	if o.Logger != nil {
		opts.Logger = sdkLogger(o.Logger)
		opts.Interceptors = []interceptor.ClientInterceptor{&ownLoggers{}}
	}
	cl, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s (namespace %q): %w", opts.HostPort, opts.Namespace, err)
	}
	return cl, nil
}
