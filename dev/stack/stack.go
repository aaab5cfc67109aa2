// Package stack runs the whole chargeonce system in one process: an embedded
// Temporal server with its Web UI, the fake card provider, the payment
// worker, and the checkout API, on SQLite files under one data directory.
// The merchant database may instead be PostgreSQL (Config.DatabaseURL).
//
// It is what `go run ./dev` starts, and what the end-to-end tests start, so
// that the tests exercise the program a newcomer runs.
package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/checkout"
	"chargeonce/dev/receiver"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/hold"
	"chargeonce/internal/alert"
	"chargeonce/internal/apikey"
	"chargeonce/internal/backend"
	"chargeonce/internal/codec"
	"chargeonce/internal/metrics"
	"chargeonce/internal/ownerfile"
	"chargeonce/internal/serve"
	"chargeonce/internal/temporalclient"
	"chargeonce/internal/webhook"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// Files under the data directory.
const (
	AppDBFile    = "chargeonce.db"
	CodecKeyFile = "codec.key"
	// CodecTokenFile keeps the token the payload codec asks of its
	// callers, generated on first start beside the payload key.
	CodecTokenFile = "codec.token"
	// CardHashKeyFile keeps the secret key of the card hashes, generated on
	// first start beside the payload key.
	CardHashKeyFile = "card-hash.key"
	// ProviderDBFile is where dev keeps the fake provider's state, through
	// Config.Provider.DataFile.
	ProviderDBFile = "fakeprovider.db"
	// WebhookSecretFile keeps the secret that signs the fake provider's
	// events to the API, generated on first start.
	WebhookSecretFile = "webhook.secret"
	// BackupDBFile and BackupSecretFile are ProviderDBFile and
	// WebhookSecretFile of the backup provider (Config.Backup).
	BackupDBFile     = "fakeprovider-backup.db"
	BackupSecretFile = "webhook-backup.secret"
)

// BackupName names the stack's backup provider (Config.Backup).
const BackupName = "backup"

// DevBuildID is the version of the Worker Deployment that the stack's
// worker joins. It is one for every build: the stack's worker is the only
// one of its data directory, so that a rebuilt stack carries its open runs
// on to the new code, as it takes over the published timing (Config.Timing).
const DevBuildID = "dev"

// Config configures the stack. Ports of 0 take a free port.
type Config struct {
	// DatabaseURL is the merchant database's DSN, as store.Open takes it.
	// Empty means the SQLite file AppDBFile in the data directory.
	DatabaseURL string
	// DataDir holds the SQLite files, the payload key and the API key
	// (apikey.FileName). Empty means a
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
	// Timing is the payment timing of the stack's worker, which publishes it
	// in the merchant database for every checkout; zero fields take the
	// defaults. A different timing that an earlier run published on the same
	// database is replaced, with one warning that names both: no other
	// worker polls the stack's Temporal, so none runs with the old one.
	// Open attempts keep theirs, in their deadline and their workflow's
	// input. With ExternalWorkers it must be zero: the worker processes own
	// and publish the timing.
	Timing workflows.Timing
	// CheckoutBudget is how long a checkout waits; zero means the default.
	CheckoutBudget time.Duration
	// Capture is the merchant's capture mode (api.Settings.Capture); empty
	// means automatic.
	Capture chargeonce.CaptureMode
	// Provider configures the fake provider (chaos mode, retention,
	// webhook chaos).
	Provider fakeprovider.Config
	// Backup, when set, configures a second fake provider, named
	// BackupName, on BackupPort: a provider of its own, with its own books,
	// chaos, events and secret. Every payment then goes to the first fake
	// provider and moves to the backup when the first charged nothing
	// (routing.Of).
	Backup     *fakeprovider.Config
	BackupPort int
	// ProviderAPI is the dialect the worker speaks to the fake provider,
	// dialect.IETF or dialect.Stripe; empty means IETF.
	ProviderAPI string
	// ProviderEvents makes the fake provider post its events to the API's
	// path for it (WebhookURL), signed with the secret of WebhookSecretFile,
	// which the API verifies; the API takes them at api.WebhookPath too. Without it, only lookups and customer retries settle
	// an unknown outcome.
	ProviderEvents bool
	// SweepEvery is the outbox sweep's period; zero means the default.
	SweepEvery time.Duration
	// EventRetries is the retry schedule of the merchant events, and
	// EventPoll how often the dispatcher looks for due deliveries; nil and
	// zero mean notify's defaults. Tests shorten them.
	EventRetries []time.Duration
	EventPoll    time.Duration
	// EventNetworks are the internal networks that events may be sent to,
	// at their registration through the API and by the dispatcher; nil
	// allows none, as in production. The dev receiver needs loopback
	// (notify.LoopbackNetworks).
	EventNetworks notify.AllowedNetworks
	// ExternalWorkers leaves the payment worker, and with it the outbox
	// sweep, to separate worker processes, so that a fault-injection run can
	// kill them without killing the stack.
	ExternalWorkers bool
	// WorkerOptions tune the payment worker's Temporal worker (pollers,
	// concurrency); the zero value is the SDK's defaults.
	WorkerOptions sdkworker.Options
	// CodecKeys is the payload keyring; empty means a key file in DataDir,
	// generated on first start.
	CodecKeys string
	// CardHashKey is the key of the card hashes
	// (chargeonce.ParseCardHashKey); empty means CardHashKeyFile in
	// DataDir, generated on first start.
	CardHashKey string
	// Logger receives the logs of every part.
	Logger *slog.Logger
	// Receiver is the host:port of the dev receiver
	// (dev/receiver), a stand-in for the merchant's backend that is
	// registered as an event endpoint; empty runs none.
	Receiver string
	// ReceiverOut takes the receiver's line per event; nil discards them.
	ReceiverOut io.Writer
	// Stopping, when set, hears from Close what it is about to wait for,
	// one part at a time ("checkout API, waiting for 1 request in flight
	// (up to 12s)"), so that a person watching a slow stop knows why.
	Stopping func(what string)
}

// Flag names that move each port; a busy port's error names them.
const (
	FlagTemporalPort = "temporal-port"
	FlagUIPort       = "ui-port"
	FlagProviderPort = "provider-port"
	FlagBackupPort   = "backup-port"
	FlagAPIPort      = "api-port"
	FlagReceiver     = "receiver"
)

// Stack is a running local stack. Close it once.
type Stack struct {
	cfg        Config
	tempDir    string
	keyCreated bool
	// codecToken is what the codec asks of its callers; the Web UI's codec
	// endpoint carries it.
	codecToken string
	hasher     chargeonce.CardHasher
	// secretCreated reports that Start generated the webhook secret file.
	secretCreated bool
	// apiKey is the key of APIKeyFile; apiKeyCreated says Start made it.
	apiKey        string
	apiKeyCreated bool
	provider      *fakeprovider.Provider
	providerS     *fakeprovider.Server
	// backup and backupS are the backup provider; nil without one.
	backup  *fakeprovider.Provider
	backupS *fakeprovider.Server
	// routes are the stack's providers, the first fake and the backup.
	routes *routing.Table
	// mu guards temporal, which RestartTemporal replaces.
	mu       sync.Mutex
	temporal *temporalserver.Server
	conn     *backend.Conn
	// checkout is the API's checkout service.
	checkout *checkout.Service
	// refunds is the API's refund service.
	refunds *refund.Service
	// holds is the API's service of captures and voids.
	holds *hold.Service
	apiS  *serve.Server
	// receiverS serves the dev receiver, registered as receiverEndpoint;
	// nil when there is none.
	receiverS        *serve.Server
	receiverEndpoint string
	// inFlight counts the API's requests in progress, which its shutdown
	// waits for.
	inFlight atomic.Int64
	closers  []func(context.Context) error
}

// Start starts every part, in dependency order. On error, the parts already
// started are stopped again.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Logger == nil {
		return nil, errors.New("stack: a logger is required")
	}
	if cfg.ExternalWorkers && cfg.Timing != (workflows.Timing{}) {
		return nil, errors.New("stack: Timing configures the stack's own worker; with ExternalWorkers the worker processes publish their timing")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	s := &Stack{cfg: cfg}
	if err := s.start(ctx); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) error {
	// One registry serves the whole stack, and it counts the alerts that
	// any part logs.
	reg := metrics.NewRegistry()
	logger, err := alert.Counting(s.cfg.Logger, reg)
	if err != nil {
		return err
	}
	s.cfg.Logger = logger
	cfg := s.cfg
	if err := s.prepareDataDir(); err != nil {
		return err
	}

	// Take the HTTP ports first, so that a busy port is reported before
	// anything slow starts.
	providerLn, err := s.listen(cfg.ProviderPort, FlagProviderPort)
	if err != nil {
		return err
	}
	var backupLn net.Listener
	if cfg.Backup != nil {
		if backupLn, err = s.listen(cfg.BackupPort, FlagBackupPort); err != nil {
			return err
		}
	}
	apiLn, err := s.listen(cfg.APIPort, FlagAPIPort)
	if err != nil {
		return err
	}
	apiURL := "http://" + apiLn.Addr().String()
	var receiverLn net.Listener
	if cfg.Receiver != "" {
		if receiverLn, err = serve.Listen(cfg.Receiver, FlagReceiver); err != nil {
			return err
		}
		s.closers = append(s.closers, func(context.Context) error { return closeListener(receiverLn) })
	}

	keyring, err := s.keyring()
	if err != nil {
		return err
	}
	if s.hasher, err = s.cardHasher(); err != nil {
		return err
	}
	if s.codecToken, _, err = codec.LoadOrCreateTokenFile(s.CodecTokenFile()); err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	token, err := codec.ParseToken(s.codecToken)
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	secret, created, err := webhook.LoadOrCreateSecretFile(s.WebhookSecretFile())
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	s.secretCreated = created
	if s.provider, s.providerS, err = s.startProvider(cfg.Provider, "fake provider", "fakeprovider", providerLn, apiURL+s.webhookPath(), secret); err != nil {
		return err
	}
	first := routing.Provider{Settings: s.providerSettings(), WebhookSecrets: []webhook.Secret{secret}}
	s.routes = routing.Of(first)
	if cfg.Backup != nil {
		backupSecret, _, err := webhook.LoadOrCreateSecretFile(filepath.Join(s.dataDir(), BackupSecretFile))
		if err != nil {
			return fmt.Errorf("stack: %w", err)
		}
		// The backup's ids carry its name, so that they are never the
		// first provider's, as no two real providers' are.
		backupCfg := *cfg.Backup
		backupCfg.IDTag = BackupName
		if s.backup, s.backupS, err = s.startProvider(backupCfg, "backup provider", "fakeprovider-"+BackupName, backupLn, apiURL+api.ProviderWebhookPath(BackupName), backupSecret); err != nil {
			return err
		}
		settings := fakeprovider.DialectSettings(cfg.ProviderAPI, s.backupS.URL())
		settings.Name = BackupName
		s.routes = routing.Of(first, routing.Provider{Settings: settings, WebhookSecrets: []webhook.Secret{backupSecret}})
	}
	if err := s.startTemporal(ctx, s.uiCodecEndpoint(apiURL)); err != nil {
		return err
	}
	s.closers = append(s.closers, func(context.Context) error {
		s.stopping("Temporal server")
		return s.currentTemporal().Stop()
	})

	// The worker and the API are built as their commands build them, on
	// one backend: the processes of the production shape, in one.
	s.conn, err = backend.Connect(ctx, backend.Config{
		Temporal:    temporalclient.Config{Address: s.TemporalAddress(), Namespace: temporalserver.DefaultNamespace},
		DatabaseURL: s.DatabaseURL(), Keyring: keyring, CardHasher: s.hasher, Registry: reg, Logger: cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	s.closers = append(s.closers, func(context.Context) error { return s.conn.Close() })
	if !cfg.ExternalWorkers {
		if err := s.startWorker(ctx); err != nil {
			return err
		}
	}
	if err := s.loadOrCreateAPIKey(ctx); err != nil {
		return err
	}
	// The API verifies at the provider what its events claim, as the
	// worker looks charges and refunds up.
	finder, err := dialect.New(dialect.Config{Settings: s.providerSettings(), Logger: cfg.Logger})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	handler, services, err := api.Build(ctx, s.conn, api.Settings{CheckoutBudget: cfg.CheckoutBudget, Routing: s.routes, Finder: finder,
		EventNetworks: cfg.EventNetworks, Capture: cfg.Capture, WebUI: s.UIURL()})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	s.checkout, s.refunds, s.holds = services.Checkout, services.Refunds, services.Holds
	// The browser calls the codec from the UI's origin, under whichever
	// name the user typed for the loopback address.
	ui := s.UIURL()
	origins := []string{ui, strings.Replace(ui, "//127.0.0.1:", "//localhost:", 1)}
	codecHandler := http.StripPrefix(codecPath, codec.NewHTTPHandler(keyring, token, origins...))
	s.apiS = serve.Start(apiLn, s.counting(withCodec(codecHandler, handler)))
	budget := cmp.Or(cfg.CheckoutBudget, checkout.DefaultBudget(cfg.Timing.WithDefaults()))
	s.closers = append(s.closers, func(ctx context.Context) error {
		// The provider's events go to the API: they stop with it, rather
		// than fail against it until the provider stops too.
		s.provider.StopWebhooks()
		if s.backup != nil {
			s.backup.StopWebhooks()
		}
		what := "checkout API"
		if n := s.inFlight.Load(); n > 0 {
			what += fmt.Sprintf(", waiting for %s in flight (up to %s)", chargeonce.Plural(int(n), "request"), budget)
		}
		s.stopping(what)
		return s.apiS.Shutdown(ctx)
	})
	if receiverLn != nil {
		return s.startReceiver(ctx, receiverLn)
	}
	return nil
}

// counting counts the requests in progress of h in s.inFlight.
func (s *Stack) counting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// stopping tells Config.Stopping what Close waits for next.
func (s *Stack) stopping(what string) {
	if s.cfg.Stopping != nil {
		s.cfg.Stopping(what)
	}
}

// checkReceiverURL refuses a dev receiver that the dispatcher would not
// send to, as one whose network is not allowed.
func checkReceiverURL(raw string, allows notify.AllowedNetworks) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("stack: dev receiver: %w", err)
	}
	if err := allows.CheckURL(u); err != nil {
		return fmt.Errorf("stack: the dev receiver's URL %s %w; allow its network (--event-allowed-networks) or run no receiver", raw, err)
	}
	return nil
}

// receiverDescription names the endpoints of the dev receiver.
const receiverDescription = "dev stack receiver"

// startReceiver serves the dev receiver on ln and registers it as an event
// endpoint for every type. A data directory keeps its endpoints across
// restarts, so an endpoint of the same URL is reused, as it was left
// (enabled or disabled through the API): one per address, not one per start.
func (s *Stack) startReceiver(ctx context.Context, ln net.Listener) error {
	url := "http://" + ln.Addr().String() + receiver.Path
	if err := checkReceiverURL(url, s.cfg.EventNetworks); err != nil {
		return err
	}
	st := s.conn.Store
	endpoints, err := st.Endpoints(ctx)
	if err != nil {
		return fmt.Errorf("stack: dev receiver: %w", err)
	}
	for _, e := range endpoints {
		if e.URL == url {
			s.receiverEndpoint = e.ID
			break
		}
	}
	if s.receiverEndpoint == "" {
		e, err := st.CreateEndpoint(ctx, store.NewEndpoint{ID: chargeonce.NewEndpointID(), URL: url,
			Description: receiverDescription, Secret: webhook.NewSecret(), Now: time.Now()})
		if err != nil {
			return fmt.Errorf("stack: dev receiver: register %s: %w", url, err)
		}
		s.receiverEndpoint = e.ID
	}
	id := s.receiverEndpoint
	out := s.cfg.ReceiverOut
	if out == nil {
		out = io.Discard
	}
	h, err := receiver.New(receiver.Config{Out: out, Secrets: func(ctx context.Context) ([]webhook.Secret, error) {
		e, err := st.GetEndpoint(ctx, id)
		if err != nil {
			return nil, err
		}
		return notify.LiveSecrets(e, time.Now())
	}})
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	s.receiverS = serve.Start(ln, h)
	s.closers = append(s.closers, s.receiverS.Shutdown)
	return nil
}

// loadOrCreateAPIKey keeps a key with every scope in the data directory's
// apikey.FileName, for the starter and the tests.
func (s *Stack) loadOrCreateAPIKey(ctx context.Context) error {
	key, created, err := apikey.LoadOrCreateFile(ctx, s.conn.Store, s.APIKeyFile(), "dev stack", apikey.AllScopes())
	if err != nil {
		return fmt.Errorf("stack: API key: %w", err)
	}
	s.apiKey, s.apiKeyCreated = key.String(), created
	return nil
}

// codecPath is where the API server serves the payload codec for the Web UI.
const codecPath = "/codec"

// withCodec serves codecPath with codec and hands every other request to the
// API as it came. No ServeMux stands in front of the API, because a mux
// would answer an unclean path ("//api/orders/1001") with its own redirect
// and HTML body, where the API answers with problem+json.
func withCodec(codec, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, codecPath+"/") {
			codec.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// uiCodecEndpoint is the codec endpoint the Web UI calls from the browser,
// which can send no header of ours: the token travels as the path's prefix
// (codec.NewHTTPHandler).
func (s *Stack) uiCodecEndpoint(apiURL string) string {
	return apiURL + codecPath + "/" + s.codecToken
}

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
	s.closers = append(s.closers, func(context.Context) error { return closeListener(ln) })
	return ln, nil
}

// closeListener closes a listener that a server may have closed already.
func closeListener(ln net.Listener) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
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

func (s *Stack) cardHasher() (chargeonce.CardHasher, error) {
	key := s.cfg.CardHashKey
	if key == "" {
		var err error
		key, _, err = ownerfile.LoadOrCreate(filepath.Join(s.dataDir(), CardHashKeyFile), func() (string, error) { return chargeonce.NewCardHashKey(), nil })
		if err != nil {
			return chargeonce.CardHasher{}, fmt.Errorf("stack: card hash key: %w", err)
		}
	}
	h, err := chargeonce.ParseCardHashKey(key)
	if err != nil {
		return chargeonce.CardHasher{}, fmt.Errorf("stack: %w", err)
	}
	return h, nil
}

// startProvider starts a fake provider of cfg on ln, which posts its
// events to webhookURL signed with secret when the stack has provider
// events, and logs as component; what names it when it stops.
func (s *Stack) startProvider(cfg fakeprovider.Config, what, component string, ln net.Listener, webhookURL string, secret webhook.Secret) (*fakeprovider.Provider, *fakeprovider.Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = s.cfg.Logger.With("component", component)
	}
	if s.cfg.ProviderEvents {
		cfg.Webhooks.URLs = []string{webhookURL}
		cfg.Webhooks.Secrets = []string{secret.String()}
	}
	p, err := fakeprovider.New(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("stack: %s: %w", what, err)
	}
	srv := fakeprovider.Serve(ln, p)
	s.closers = append(s.closers, func(ctx context.Context) error {
		s.stopping(what)
		return srv.Shutdown(ctx)
	})
	return p, srv, nil
}

func (s *Stack) startTemporal(ctx context.Context, codecEndpoint string) error {
	t, err := s.runTemporal(ctx, s.cfg.TemporalPort, s.cfg.UIPort, codecEndpoint)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.temporal = t
	s.mu.Unlock()
	return nil
}

// runTemporal starts the embedded Temporal server on the given ports.
func (s *Stack) runTemporal(ctx context.Context, frontendPort, uiPort int, codecEndpoint string) (*temporalserver.Server, error) {
	dbDir := s.cfg.DataDir // empty: in memory
	t, err := temporalserver.Start(ctx, temporalserver.Config{
		DataDir:          dbDir,
		Host:             s.cfg.Host,
		FrontendPort:     frontendPort,
		UIPort:           uiPort,
		Namespace:        temporalserver.DefaultNamespace,
		CodecEndpoint:    codecEndpoint,
		SearchAttributes: workflows.SearchAttributes(),
		Logger:           s.cfg.Logger,
	})
	var busy *temporalserver.PortError
	if errors.As(err, &busy) {
		flag := FlagTemporalPort
		if busy.Role == "ui" {
			flag = FlagUIPort
		}
		return nil, fmt.Errorf("%w: stop what is using it, or choose another with --%s", err, flag)
	}
	if err != nil {
		return nil, fmt.Errorf("stack: Temporal server: %w", err)
	}
	return t, nil
}

// RestartTemporal stops the embedded Temporal server and starts it again on
// the same SQLite file and the same ports, as a crash and restart of the
// Temporal service would. Clients, workers and the API reconnect by
// themselves; workflows resume from the file. It needs a DataDir, because an
// in-memory server would come back empty.
func (s *Stack) RestartTemporal(ctx context.Context) error {
	return s.RestartTemporalAfter(ctx, nil)
}

// RestartTemporalAfter is RestartTemporal that runs whileDown, when it is
// not nil, while the server is stopped, so that a test can watch the stack
// without Temporal. The server starts again whatever whileDown returns;
// its error is returned then.
func (s *Stack) RestartTemporalAfter(ctx context.Context, whileDown func(context.Context) error) error {
	if s.cfg.DataDir == "" {
		return errors.New("stack: restart Temporal: the server runs in memory; set DataDir to keep its state across a restart")
	}
	old := s.currentTemporal()
	codecEndpoint := s.uiCodecEndpoint(s.apiS.URL())
	_, port, err := net.SplitHostPort(old.FrontendAddress())
	if err != nil {
		return fmt.Errorf("stack: restart Temporal: frontend address: %w", err)
	}
	frontendPort, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("stack: restart Temporal: frontend port: %w", err)
	}
	uiPort := -1
	if ui := old.UIAddress(); ui != "" {
		u, err := url.Parse(ui)
		if err != nil {
			return fmt.Errorf("stack: restart Temporal: Web UI address: %w", err)
		}
		if uiPort, err = strconv.Atoi(u.Port()); err != nil {
			return fmt.Errorf("stack: restart Temporal: Web UI port: %w", err)
		}
	}
	if err := old.Stop(); err != nil {
		return fmt.Errorf("stack: restart Temporal: stop: %w", err)
	}
	var downErr error
	if whileDown != nil {
		downErr = whileDown(ctx)
	}
	t, err := s.runTemporal(ctx, frontendPort, uiPort, codecEndpoint)
	if err != nil {
		return errors.Join(downErr, fmt.Errorf("stack: restart Temporal: %w", err))
	}
	s.mu.Lock()
	s.temporal = t
	s.mu.Unlock()
	return downErr
}

func (s *Stack) currentTemporal() *temporalserver.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.temporal
}

// providerSettings are the settings of the stack's provider: the fake, in
// the dialect the stack speaks.
func (s *Stack) providerSettings() dialect.Settings {
	return fakeprovider.DialectSettings(s.cfg.ProviderAPI, s.providerS.URL())
}

// providerName is the name of the stack's provider, which its settings
// give before the provider serves at a URL.
func (s *Stack) providerName() string {
	return fakeprovider.DialectSettings(s.cfg.ProviderAPI, "").NameOrDefault()
}

// startWorker starts the payment worker as the worker command would,
// against the fake provider.
func (s *Stack) startWorker(ctx context.Context) error {
	retries := s.cfg.EventRetries
	if retries == nil {
		retries = notify.DefaultSchedule
	}
	prepared, err := worker.Prepare(worker.Config{
		Routing:             s.routes,
		SettlementGraceDays: worker.DefaultSettlementGraceDays,
		Timing:              s.cfg.Timing.WithDefaults(),
		ReplaceTiming:       true, // see Config.Timing
		SweepEvery:          cmp.Or(s.cfg.SweepEvery, worker.DefaultSweepEvery),
		EventRetries:        retries,
		EventPoll:           cmp.Or(s.cfg.EventPoll, notify.DefaultPoll),
		EventNetworks:       s.cfg.EventNetworks,
		Options:             s.cfg.WorkerOptions,
		BuildID:             DevBuildID,
	}, s.cfg.Logger)
	if err != nil {
		return fmt.Errorf("stack: %w", err)
	}
	w, err := prepared.Start(ctx, s.conn)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func(context.Context) error {
		s.stopping("payment worker")
		w.Stop()
		return nil
	})
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
func (s *Stack) TemporalAddress() string { return s.currentTemporal().FrontendAddress() }

// TemporalPersistence describes the embedded Temporal server's database and
// its settings, for logs and benchmark reports.
func (s *Stack) TemporalPersistence() string { return s.currentTemporal().PersistenceSettings() }

// UIURL is the Temporal Web UI's base URL, empty when the UI is off.
func (s *Stack) UIURL() string { return s.currentTemporal().UIAddress() }

// DatabaseURL is the app database's DSN, which the worker processes of a
// stack with ExternalWorkers open too: Config.DatabaseURL, or the SQLite
// file in the data directory.
func (s *Stack) DatabaseURL() string {
	if s.cfg.DatabaseURL != "" {
		return s.cfg.DatabaseURL
	}
	return "sqlite:" + filepath.Join(s.dataDir(), AppDBFile)
}

// KeyCreated reports whether Start generated the payload key file.
func (s *Stack) KeyCreated() bool { return s.keyCreated }

// APIKey is the key, with every scope, that the stack keeps in APIKeyFile.
func (s *Stack) APIKey() string { return s.apiKey }

// APIKeyFile is the file of the API key under the data directory.
func (s *Stack) APIKeyFile() string { return filepath.Join(s.dataDir(), apikey.FileName) }

// APIKeyCreated reports whether Start created the API key, on first start.
func (s *Stack) APIKeyCreated() bool { return s.apiKeyCreated }

// KeyFile is the payload key file under the data directory.
func (s *Stack) KeyFile() string { return filepath.Join(s.dataDir(), CodecKeyFile) }

// CardHasher computes the card hashes that the stack's database keeps.
func (s *Stack) CardHasher() chargeonce.CardHasher { return s.hasher }

// CodecTokenFile is the file that keeps the codec's token.
func (s *Stack) CodecTokenFile() string { return filepath.Join(s.dataDir(), CodecTokenFile) }

// CodecURL is the payload codec's base URL; its callers present the token of
// CodecTokenFile as "Authorization: Bearer <token>".
func (s *Stack) CodecURL() string { return s.APIURL() + codecPath }

// WebhookURL is where the API receives the provider's events: the path
// that names the stack's provider.
func (s *Stack) WebhookURL() string { return s.APIURL() + s.webhookPath() }

// webhookPath is the API's path for the events of the stack's provider.
func (s *Stack) webhookPath() string {
	return api.ProviderWebhookPath(s.providerName())
}

// WebhookSecretFile is the file under the data directory that keeps the
// secret signing the provider's events.
func (s *Stack) WebhookSecretFile() string { return filepath.Join(s.dataDir(), WebhookSecretFile) }

// WebhookSecretCreated reports whether Start generated the webhook secret.
func (s *Stack) WebhookSecretCreated() bool { return s.secretCreated }

// ReceiverURL is where the dev receiver takes events; empty when the
// stack runs none.
func (s *Stack) ReceiverURL() string {
	if s.receiverS == nil {
		return ""
	}
	return s.receiverS.URL() + receiver.Path
}

// ReceiverEndpoint is the id of the event endpoint that sends to the dev
// receiver; empty when the stack runs none.
func (s *Stack) ReceiverEndpoint() string { return s.receiverEndpoint }

// Provider is the fake provider, for tests and demos.
func (s *Stack) Provider() *fakeprovider.Provider { return s.provider }

// ProviderNames names the stack's providers, the first one's first: each
// one's books are settled on their own.
func (s *Stack) ProviderNames() []string {
	var names []string
	for _, p := range s.routes.Providers() {
		names = append(names, p.NameOrDefault())
	}
	return names
}

// Backup is the backup provider (Config.Backup); nil without one.
func (s *Stack) Backup() *fakeprovider.Provider { return s.backup }

// BackupURL is the backup provider's base URL; empty without one.
func (s *Stack) BackupURL() string {
	if s.backupS == nil {
		return ""
	}
	return s.backupS.URL()
}

// Store is the app database.
func (s *Stack) Store() store.Store { return s.conn.Store }

// Client is a Temporal client with the stack's payload encryption.
func (s *Stack) Client() client.Client { return s.conn.Temporal }

// Checkout is the checkout service behind the API.
func (s *Stack) Checkout() *checkout.Service { return s.checkout }

// Refunds is the refund service behind the API.
func (s *Stack) Refunds() *refund.Service { return s.refunds }

// Holds is the service of captures and voids behind the API.
func (s *Stack) Holds() *hold.Service { return s.holds }
