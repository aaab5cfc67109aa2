// Package stack runs the whole chargeonce system in one process: an embedded
// Temporal server with its Web UI, the fake card provider, the payment
// worker, and the checkout API, on SQLite files under one data directory.
//
// It is what `go run ./dev` starts, and what the end-to-end tests start, so
// that the tests exercise the program a newcomer runs.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/checkout"
	"chargeonce/codec"
	"chargeonce/fakeprovider"
	"chargeonce/internal/logging"
	"chargeonce/internal/serve"
	"chargeonce/metrics"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/temporalclient"
	"chargeonce/temporalserver"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// Files under the data directory.
const (
	TemporalDBFile = "temporal.db"
	AppDBFile      = "chargeonce.db"
	CodecKeyFile   = "codec.key"
)

// Namespace is the Temporal namespace of the local stack.
const Namespace = "default"

// Config configures the stack. Ports of 0 take a free port.
type Config struct {
	// DataDir holds the SQLite files and the payload key. Empty means a
	// temporary directory, removed on Close, and an in-memory Temporal.
	DataDir string
	// Host is the interface every part listens on.
	Host string
	// TemporalPort is the frontend's gRPC port (7233 for the official CLI).
	TemporalPort int
	// UIPort serves the Temporal Web UI.
	UIPort int
	// ProviderPort serves the fake provider.
	ProviderPort int
	// APIPort serves the checkout API.
	APIPort int
	// Timing is the payment workflow's timing; zero means the defaults.
	Timing workflows.Timing
	// CheckoutBudget is how long a checkout waits; zero means the default.
	CheckoutBudget time.Duration
	// Provider configures the fake provider (chaos mode, retention).
	Provider fakeprovider.Config
	// SweepEvery is the outbox sweep's period; zero means the default.
	SweepEvery time.Duration
	// CodecKeys is the payload keyring; empty means a key file in DataDir,
	// generated on first start.
	CodecKeys string
	// Logger receives the logs of every part.
	Logger *slog.Logger
}

// Flag names that move each port; a busy port's error names them.
const (
	FlagTemporalPort = "temporal-port"
	FlagUIPort       = "ui-port"
	FlagProviderPort = "provider-port"
	FlagAPIPort      = "api-port"
)

// Stack is a running local stack. Close it once.
type Stack struct {
	cfg        Config
	tempDir    string
	keyCreated bool
	provider   *fakeprovider.Provider
	providerS  *serve.Server
	temporal   *temporalserver.Server
	client     client.Client
	store      store.Store
	checkout   *checkout.Service
	worker     *worker.Worker
	apiS       *serve.Server
	closers    []func(context.Context) error
}

// Start starts every part, in dependency order. On error, the parts already
// started are stopped again.
func Start(ctx context.Context, cfg Config) (s *Stack, err error) {
	if cfg.Logger == nil {
		return nil, errors.New("stack: a logger is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	s = &Stack{cfg: cfg}
	defer func() {
		if err != nil {
			_ = s.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := s.prepareDataDir(); err != nil {
		return nil, err
	}

	// Take the HTTP ports first, so that a busy port is reported before
	// anything slow starts.
	providerLn, err := s.listen(cfg.ProviderPort, FlagProviderPort)
	if err != nil {
		return nil, err
	}
	apiLn, err := s.listen(cfg.APIPort, FlagAPIPort)
	if err != nil {
		return nil, err
	}
	apiURL := "http://" + apiLn.Addr().String()

	keyring, err := s.keyring()
	if err != nil {
		return nil, err
	}
	if err := s.startProvider(providerLn); err != nil {
		return nil, err
	}
	if err := s.startTemporal(ctx, apiURL+codecPath); err != nil {
		return nil, err
	}

	reg := metrics.NewRegistry()
	sdkMetrics, err := metrics.TemporalHandler(reg, cfg.Logger)
	if err != nil {
		return nil, err
	}
	s.client, err = temporalclient.Dial(ctx,
		temporalclient.Config{Address: s.temporal.FrontendAddress(), Namespace: s.temporal.Namespace()},
		temporalclient.Options{DataConverter: codec.NewDataConverter(keyring), MetricsHandler: sdkMetrics, Logger: logging.AtLeast(cfg.Logger, slog.LevelWarn)})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func(context.Context) error { s.client.Close(); return nil })

	if err := s.openStore(ctx, reg); err != nil {
		return nil, err
	}
	if err := s.startWorker(ctx, reg); err != nil {
		return nil, err
	}

	handler, err := api.New(api.Config{Checkout: s.checkout, Store: s.store, Metrics: reg, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(codecPath+"/", http.StripPrefix(codecPath, codec.NewHTTPHandler(keyring, s.temporal.UIAddress())))
	mux.Handle("/", handler)
	s.apiS = serve.Start(apiLn, mux)
	s.closers = append(s.closers, s.apiS.Shutdown)
	return s, nil
}

// codecPath is where the API server serves the payload codec for the Web UI.
const codecPath = "/codec"

func (s *Stack) prepareDataDir() error {
	if s.cfg.DataDir != "" {
		if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("stack: create data directory: %w", err)
		}
		return nil
	}
	dir, err := os.MkdirTemp("", "chargeonce-")
	if err != nil {
		return fmt.Errorf("stack: create a temporary data directory: %w", err)
	}
	s.tempDir = dir
	s.closers = append(s.closers, func(context.Context) error { return os.RemoveAll(dir) })
	return nil
}

// dataDir is where the app database and the key live.
func (s *Stack) dataDir() string {
	if s.tempDir != "" {
		return s.tempDir
	}
	return s.cfg.DataDir
}

// listen takes a port for a server that starts later. Until that server
// owns the listener, Close releases it; closing it twice is harmless.
func (s *Stack) listen(port int, flag string) (net.Listener, error) {
	ln, err := serve.Listen(net.JoinHostPort(s.cfg.Host, strconv.Itoa(port)), flag)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func(context.Context) error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	return ln, nil
}

func (s *Stack) keyring() (*codec.Keyring, error) {
	if s.cfg.CodecKeys != "" {
		return codec.ParseKeyring(s.cfg.CodecKeys)
	}
	k, created, err := codec.LoadOrCreateKeyFile(filepath.Join(s.dataDir(), CodecKeyFile))
	if err != nil {
		return nil, fmt.Errorf("stack: payload key: %w", err)
	}
	s.keyCreated = created
	return k, nil
}

func (s *Stack) startProvider(ln net.Listener) error {
	cfg := s.cfg.Provider
	if cfg.Logger == nil {
		cfg.Logger = s.cfg.Logger.With("component", "fakeprovider")
	}
	p, err := fakeprovider.New(cfg)
	if err != nil {
		return fmt.Errorf("stack: fake provider: %w", err)
	}
	s.provider = p
	s.providerS = serve.Start(ln, p)
	s.closers = append(s.closers, s.providerS.Shutdown, p.Close)
	return nil
}

func (s *Stack) startTemporal(ctx context.Context, codecEndpoint string) error {
	dbDir := s.cfg.DataDir // empty: in memory
	t, err := temporalserver.Start(ctx, temporalserver.Config{
		DataDir:       dbDir,
		Host:          s.cfg.Host,
		FrontendPort:  s.cfg.TemporalPort,
		UIPort:        s.cfg.UIPort,
		Namespace:     Namespace,
		CodecEndpoint: codecEndpoint,
		SearchAttributes: map[string]enums.IndexedValueType{
			chargeonce.SearchAttrOrderID:           enums.INDEXED_VALUE_TYPE_KEYWORD,
			chargeonce.SearchAttrPaymentStatus:     enums.INDEXED_VALUE_TYPE_KEYWORD,
			chargeonce.SearchAttrMerchantReference: enums.INDEXED_VALUE_TYPE_KEYWORD,
			chargeonce.SearchAttrProviderPaymentID: enums.INDEXED_VALUE_TYPE_KEYWORD,
		},
		Logger: s.cfg.Logger,
	})
	var busy *temporalserver.PortError
	if errors.As(err, &busy) {
		flag := FlagTemporalPort
		if busy.Role == "ui" {
			flag = FlagUIPort
		}
		return fmt.Errorf("%w: stop what is using it, or choose another with --%s", err, flag)
	}
	if err != nil {
		return fmt.Errorf("stack: Temporal server: %w", err)
	}
	s.temporal = t
	s.closers = append(s.closers, func(context.Context) error { return t.Stop() })
	return nil
}

func (s *Stack) openStore(ctx context.Context, reg prometheus.Registerer) error {
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(s.dataDir(), AppDBFile))
	if err != nil {
		return fmt.Errorf("stack: app database: %w", err)
	}
	s.store = st
	s.closers = append(s.closers, func(context.Context) error { return st.Close() })
	return metrics.RegisterOpenAttempts(reg, st, s.cfg.Logger)
}

func (s *Stack) startWorker(ctx context.Context, reg prometheus.Registerer) error {
	pc, err := provider.New(provider.Config{
		BaseURL:    s.providerS.URL(),
		HTTPClient: &http.Client{Timeout: time.Minute},
		Logger:     s.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("stack: provider client: %w", err)
	}
	s.checkout, err = checkout.New(checkout.Config{
		Store:    s.store,
		Temporal: s.client,
		Timing:   s.cfg.Timing,
		Budget:   s.cfg.CheckoutBudget,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	timing := s.cfg.Timing
	if timing == (workflows.Timing{}) {
		timing = workflows.DefaultTiming()
	}
	w, err := worker.Start(ctx, worker.Deps{
		Client:     s.client,
		Provider:   pc,
		Store:      s.store,
		Checkout:   s.checkout,
		Timing:     timing,
		SweepEvery: s.cfg.SweepEvery,
		Registerer: reg,
		Logger:     s.cfg.Logger,
	})
	if err != nil {
		return err
	}
	s.worker = w
	s.closers = append(s.closers, func(context.Context) error { w.Stop(); return nil })
	return nil
}

// Close stops every part in the reverse order of starting. The API stops
// first so no new checkout begins, Temporal and the databases last.
func (s *Stack) Close(ctx context.Context) error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i](ctx))
	}
	s.closers = nil
	return errors.Join(errs...)
}

// APIURL is the checkout API's base URL.
func (s *Stack) APIURL() string { return s.apiS.URL() }

// ProviderURL is the fake provider's base URL.
func (s *Stack) ProviderURL() string { return s.providerS.URL() }

// TemporalAddress is the Temporal frontend's host:port.
func (s *Stack) TemporalAddress() string { return s.temporal.FrontendAddress() }

// UIURL is the Temporal Web UI's base URL.
func (s *Stack) UIURL() string { return s.temporal.UIAddress() }

// CodecURL is the payload codec endpoint the Web UI decodes through.
func (s *Stack) CodecURL() string { return s.apiS.URL() + codecPath }

// KeyCreated reports whether Start generated the payload key file.
func (s *Stack) KeyCreated() bool { return s.keyCreated }

// KeyFile is the payload key file under the data directory.
func (s *Stack) KeyFile() string { return filepath.Join(s.dataDir(), CodecKeyFile) }

// Provider is the fake provider, for tests and demos.
func (s *Stack) Provider() *fakeprovider.Provider { return s.provider }

// Store is the app database.
func (s *Stack) Store() store.Store { return s.store }

// Client is a Temporal client with the stack's payload encryption.
func (s *Stack) Client() client.Client { return s.client }

// Checkout is the checkout service behind the API.
func (s *Stack) Checkout() *checkout.Service { return s.checkout }
