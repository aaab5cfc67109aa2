// Package temporalserver runs a complete Temporal server (frontend, history,
// matching and worker services, plus optionally the Temporal Web UI) inside
// the current process, persisting to SQLite.
//
// It backs the one-process development stack and every test that needs a real
// Temporal server. It is not meant for production: production runs a Temporal
// cluster on PostgreSQL.
package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporal"

	"chargeonce/internal/logging"
)

const (
	// DefaultHost is the address the frontend and the Web UI bind to when
	// Config.Host is empty.
	DefaultHost = "127.0.0.1"
	// DefaultNamespace is the namespace created when Config.Namespace is empty.
	DefaultNamespace = "default"
	// DatabaseFileName is the name of the SQLite file inside Config.DataDir.
	DatabaseFileName = "temporal.db"

	// startTimeout bounds how long Start waits for the services to accept
	// calls, on top of whatever deadline the caller's context carries, so a
	// wedged server never hangs its caller forever.
	startTimeout = 2 * time.Minute
	// portAttempts bounds how often Start picks new ports after one it
	// picked was taken before a service bound it.
	portAttempts = 3
)

// Config describes one embedded server.
type Config struct {
	// DataDir holds the SQLite database (DataDir/temporal.db). It is created
	// with mode 0700 if missing. Empty means an in-memory database whose
	// contents vanish on Stop, which is what tests want.
	DataDir string
	// Host is the IP address the frontend and the Web UI bind to; default
	// DefaultHost. It must be an IP literal. The internal services always bind
	// to loopback.
	Host string
	// FrontendPort is the gRPC port for SDK clients. Zero picks a free port
	// (tests); the development stack passes 7233, Temporal's usual port. A
	// port that is already taken makes Start fail with a *PortError.
	FrontendPort int
	// UIPort is the Web UI's HTTP port. Zero picks a free port; a negative
	// value disables the Web UI. A port that is already taken makes Start fail
	// with a *PortError.
	UIPort int
	// Namespace is created at start if missing; default DefaultNamespace.
	Namespace string
	// SearchAttributes are registered in Namespace at start. Attributes that
	// are already registered with the same type are left alone, so restarting
	// on the same DataDir is fine; one registered with another type is an
	// error.
	SearchAttributes map[string]enums.IndexedValueType
	// CodecEndpoint is the URL the Web UI calls, from the browser, to decode
	// payloads. Empty leaves payloads as stored.
	CodecEndpoint string
	// DynamicConfig sets settings of the server's dynamic configuration by
	// their names, as in a server's dynamic configuration file, over the
	// development settings; each value applies to every namespace. Tests
	// use it to run a server set up as some are in production, such as one
	// with "system.enableDeploymentVersions" false.
	DynamicConfig map[string]any
	// Logger receives the server's warnings and errors. The server is very
	// chatty below Warn, so lower levels are dropped whatever the handler
	// accepts. Nil discards everything.
	Logger *slog.Logger
}

// Server is a running embedded Temporal server.
type Server struct {
	cfg         Config
	frontend    string
	persistence string
	temporal    temporal.Server
	ui          *webUI
	dc          *dynamicConfig
	// floor is the lowest level of the server's records that reach
	// Config.Logger: warnings while it runs, errors only while it stops.
	floor *slog.LevelVar

	stopOnce sync.Once
	stopErr  error
}

// Start starts a server and returns once its frontend accepts calls, the
// namespace exists, the search attributes are usable in visibility queries
// and the Web UI (if enabled) answers HTTP.
//
// A port that is already taken yields a *PortError naming it. Cancelling ctx
// aborts the wait; the server is then stopped again.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := start(ctx, cfg)
		if attempt == portAttempts || !pickedPortTaken(cfg, err) {
			return s, err
		}
		cfg.Logger.Warn("a port picked for the Temporal server was taken before the server bound it; picking new ports",
			"attempt", attempt, "error", err)
	}
}

// pickedPortTaken reports whether a start failed because a port reservePorts
// picked was taken between its release and a service binding it: any process
// that listens on a free port or dials out may be handed it meanwhile, and
// on a busy machine that happens. Only when every port is left to chance: a
// failed start may keep the listeners it had bound, and a port the caller
// asked for would then look taken by someone else.
func pickedPortTaken(cfg Config, err error) bool {
	var fatal fatalError
	return cfg.FrontendPort == 0 && errors.As(err, &fatal) && fatal.addressInUse()
}

// start makes one attempt at Start.
func start(ctx context.Context, cfg Config) (*Server, error) {
	ports, err := reservePorts(cfg)
	if err != nil {
		return nil, err
	}
	defer ports.release()
	store, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:         cfg,
		frontend:    net.JoinHostPort(dialHost(cfg.Host), strconv.Itoa(ports.frontend)),
		persistence: store.describe(),
		dc:          newDynamicConfig(cfg.DynamicConfig),
		floor:       new(slog.LevelVar),
	}

	ports.release()
	if ports.ui != 0 {
		// The Web UI needs no running frontend to serve its pages, and binding
		// its port first leaves the shortest window for anyone to take it.
		s.ui = startWebUI(webUIConfig{
			host:          cfg.Host,
			port:          ports.ui,
			frontend:      s.frontend,
			namespace:     cfg.Namespace,
			codecEndpoint: cfg.CodecEndpoint,
		})
	}
	s.floor.Set(slog.LevelWarn)
	logger := logging.AtLeast(cfg.Logger, s.floor)
	s.temporal, err = startTemporal(cfg, s.frontend, ports, store, s.dc, logger)
	if err != nil {
		if s.ui != nil {
			err = errors.Join(err, s.ui.stop())
		}
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := s.waitReady(ctx, logger); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// waitReady brings the running services to the state Start promises.
func (s *Server) waitReady(ctx context.Context, logger *slog.Logger) error {
	if err := prepareNamespace(ctx, s.frontend, s.cfg.Namespace, s.cfg.SearchAttributes, s.dc, logger); err != nil {
		return err
	}
	if s.ui == nil {
		return nil
	}
	return s.ui.waitReady(ctx)
}

// FrontendAddress is the host:port SDK clients dial.
func (s *Server) FrontendAddress() string { return s.frontend }

// UIAddress is the Web UI's base URL, such as "http://127.0.0.1:8233", or ""
// when the UI is disabled.
func (s *Server) UIAddress() string {
	if s.ui == nil {
		return ""
	}
	return s.ui.address
}

// Namespace is the namespace created at start.
func (s *Server) Namespace() string { return s.cfg.Namespace }

// PersistenceSettings describes the SQLite database and the settings it runs
// with, for logs and benchmark reports.
func (s *Server) PersistenceSettings() string { return s.persistence }

// Stop stops the Web UI and then the Temporal services. Every committed
// workflow state is on disk when it returns, so Start on the same DataDir
// resumes every workflow. Calling Stop again returns the first result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// While the services stop, the server's own workers and clients
		// report every connection that the stop closes under them as a
		// warning ("Failed to poll for task.", "network dial error"), a
		// dozen or more that say nothing is wrong. Its errors still show.
		s.floor.Set(slog.LevelError)
		var errs []error
		if s.ui != nil {
			errs = append(errs, s.ui.stop())
		}
		if err := s.temporal.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop temporal server: %w", err))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// withDefaults fills in defaults and rejects values Start cannot honour.
func (c Config) withDefaults() (Config, error) {
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if net.ParseIP(c.Host) == nil {
		return c, fmt.Errorf("temporalserver: host %q is not an IP address", c.Host)
	}
	if c.FrontendPort < 0 || c.FrontendPort > 65535 {
		return c, fmt.Errorf("temporalserver: frontend port %d is out of range 0-65535", c.FrontendPort)
	}
	if c.UIPort > 65535 {
		return c, fmt.Errorf("temporalserver: UI port %d is out of range (0 = any free port, negative = no UI)", c.UIPort)
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	// SQLite receives the path inside a file: URI, where these characters
	// would be read as URI syntax instead of as part of the path.
	if strings.ContainsAny(c.DataDir, "?#%") {
		return c, fmt.Errorf("temporalserver: data directory %q must not contain '?', '#' or '%%'", c.DataDir)
	}
	for name, typ := range c.SearchAttributes {
		if name == "" {
			return c, errors.New("temporalserver: search attribute with empty name")
		}
		if _, known := enums.IndexedValueType_name[int32(typ)]; !known || typ == enums.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return c, fmt.Errorf("temporalserver: search attribute %q has no valid type (%d)", name, typ)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// dialHost is the address clients in this process use to reach a listener
// bound to host: a wildcard address accepts connections but cannot be dialled
// portably.
func dialHost(host string) string {
	ip := net.ParseIP(host)
	switch {
	case !ip.IsUnspecified():
		return host
	case ip.To4() != nil:
		return "127.0.0.1"
	default:
		return "::1"
	}
}
