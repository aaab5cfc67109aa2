// Package api serves the checkout HTTP API (docs/checkout-api.md): creating
// orders, checking them out, capturing or voiding their holds, refunding
// them, reading them with their
// payment attempts, refunds, provider request log and events, managing the
// merchant's event endpoints, resolving settlement exceptions, the audit
// log of every operator action, the operational endpoints /healthz and
// /metrics, and its OpenAPI document at /openapi.json (docs/openapi.json,
// the one owner of its wire format).
//
// Every request but /healthz, /openapi.json and the provider's signed
// events needs an API key (internal/apikey) as a bearer token, and each route a scope of it.
//
// Every error is answered as RFC 9457 problem+json. Bad input is refused
// before anything reaches the database or Temporal.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/docs"
	"chargeonce/hold"
	"chargeonce/internal/apikey"
	"chargeonce/internal/metrics"
	"chargeonce/internal/webhook"
	"chargeonce/notify"
	"chargeonce/refund"
	"chargeonce/store"
)

// WebhookPath is where the API receives the default provider's events
// (Config.Providers), the path that provider dashboards configured
// before providers had paths of their own keep. Each provider's events
// arrive at ProviderWebhookPath.
const WebhookPath = "/webhooks/provider"

// ProviderWebhookPath is where the API receives the events of the provider
// named name.
func ProviderWebhookPath(name string) string { return WebhookPath + "/" + name }

// OpenAPIPath is where the API serves its OpenAPI document.
const OpenAPIPath = "/openapi.json"

// Config configures the API handler.
type Config struct {
	// Checkout runs checkouts. Required.
	Checkout *checkout.Service
	// Refunds runs refund requests; nil serves no refund request route.
	Refunds *refund.Service
	// Holds runs the captures and voids of holds; nil serves no capture
	// or void request route.
	Holds *hold.Service
	// Store is the merchant database, for orders, API keys and health.
	// Required.
	Store store.Store
	// Metrics is served at /metrics. Required.
	Metrics prometheus.Gatherer
	// Logger receives one line per request and the alerts; nil discards.
	Logger *slog.Logger
	// Temporal runs the settlement workflow of
	// POST /api/settlements/{date}/run; nil answers that route 503.
	Temporal client.Client
	// WebhookSecrets hold, by provider name, the secrets that verify that
	// provider's events at POST /webhooks/provider/{name}
	// (ProviderWebhookPath); several are valid at once while one is rotated
	// out. Events name attempts and refunds of their provider only. Empty
	// serves no webhook route.
	WebhookSecrets map[string][]webhook.Secret
	// Providers names the providers that payments are routed to, the
	// default first; empty means chargeonce.DefaultProvider alone. Each
	// one's books are settled apart (GET /api/settlements/{date}?provider=),
	// and a settlement that names no provider is the default's. The
	// default's events arrive at POST /webhooks/provider (WebhookPath) as
	// well; with WebhookSecrets, it must be one of their names.
	Providers []string
	// Registerer takes the metrics of the API's own; required with
	// WebhookSecrets.
	Registerer prometheus.Registerer
	// EventNetworks are the internal networks that event endpoints may
	// point at; none by default (notify.AllowedNetworks).
	EventNetworks notify.AllowedNetworks
	// WebUI is the base URL of the Temporal Web UI, which the console
	// links each workflow to; empty shows no link.
	WebUI string
	// Namespace is the Temporal namespace of the workflows, for those
	// links.
	Namespace string
}

// healthTimeout bounds the database check of /healthz.
const healthTimeout = 2 * time.Second

type server struct {
	checkout *checkout.Service
	refunds  *refund.Service
	holds    *hold.Service
	store    store.Store
	temporal client.Client
	log      *slog.Logger
	mux      *http.ServeMux
	// eventNetworks are Config.EventNetworks.
	eventNetworks notify.AllowedNetworks
	// providers are Config.Providers, never empty: the default first.
	providers []string
}

// New returns the API's handler. Shutting it down is the caller's job,
// through http.Server.Shutdown.
func New(cfg Config) (http.Handler, error) {
	if cfg.Checkout == nil {
		return nil, errors.New("api: config: Checkout is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("api: config: Store is required")
	}
	if cfg.Metrics == nil {
		return nil, errors.New("api: config: Metrics is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	providers := cfg.Providers
	if len(providers) == 0 {
		providers = []string{chargeonce.DefaultProvider}
	}
	for _, p := range providers {
		if err := chargeonce.CheckProviderName(p); err != nil {
			return nil, fmt.Errorf("api: config: providers: %w", err)
		}
	}
	s := &server{checkout: cfg.Checkout, refunds: cfg.Refunds, holds: cfg.Holds, store: cfg.Store, temporal: cfg.Temporal, log: cfg.Logger, mux: http.NewServeMux(),
		eventNetworks: cfg.EventNetworks, providers: providers}
	// Every route but the publicPaths needs the scope it names here; the
	// state-changing operator routes are audited as the action they name,
	// once the scope is checked.
	s.mux.HandleFunc("POST /api/orders", s.require(apikey.ScopeCheckout, s.createOrder))
	s.mux.HandleFunc("POST /api/orders/{id}/checkout", s.require(apikey.ScopeCheckout, s.checkoutOrder))
	s.mux.HandleFunc("GET /api/orders/{id}", s.require(apikey.ScopeCheckout, s.getOrder))
	s.mux.HandleFunc("GET /api/orders/{id}/events", s.require(apikey.ScopeCheckout, s.orderEvents))
	if cfg.Refunds != nil {
		s.mux.HandleFunc("POST /api/orders/{id}/refunds", s.require(apikey.ScopeRefund, s.audited("refund_order", s.refundOrder)))
		s.mux.HandleFunc("POST /api/charges/{id}/refunds", s.require(apikey.ScopeOperator, s.audited("refund_charge", s.refundCharge)))
	}
	s.mux.HandleFunc("GET /api/refunds/{id}", s.require(apikey.ScopeRefund, s.getRefund))
	// A capture takes the money, as a checkout does; a void gives the
	// customer's money up, as a refund does, so a key that may only take
	// money cannot release it.
	if cfg.Holds != nil {
		s.mux.HandleFunc("POST /api/orders/{id}/capture", s.require(apikey.ScopeCheckout, s.audited("capture_order", s.moveOrder(chargeonce.MoveCapture))))
		s.mux.HandleFunc("POST /api/orders/{id}/void", s.require(apikey.ScopeRefund, s.audited("void_order", s.moveOrder(chargeonce.MoveVoid))))
	}
	s.mux.HandleFunc("GET /api/captures/{id}", s.require(apikey.ScopeCheckout, s.getMove(chargeonce.MoveCapture)))
	s.mux.HandleFunc("GET /api/voids/{id}", s.require(apikey.ScopeRefund, s.getMove(chargeonce.MoveVoid)))
	s.mux.HandleFunc("GET /api/settlements/{date}", s.require(apikey.ScopeOperator, s.getSettlement))
	s.mux.HandleFunc("POST /api/settlements/{date}/run", s.require(apikey.ScopeOperator, s.audited("run_settlement", s.runSettlement)))
	s.mux.HandleFunc("POST /api/settlements/{date}/exceptions/{id}/resolve", s.require(apikey.ScopeOperator, s.audited("resolve_exception", s.resolveException)))
	s.mux.HandleFunc("POST /api/webhook-endpoints", s.require(apikey.ScopeOperator, s.audited("create_endpoint", s.createEndpoint)))
	s.mux.HandleFunc("GET /api/webhook-endpoints", s.require(apikey.ScopeOperator, s.listEndpoints))
	s.mux.HandleFunc("GET /api/webhook-endpoints/{id}", s.require(apikey.ScopeOperator, s.getEndpoint))
	s.mux.HandleFunc("POST /api/webhook-endpoints/{id}/disable", s.require(apikey.ScopeOperator, s.audited("disable_endpoint", s.setEndpointDisabled(true))))
	s.mux.HandleFunc("POST /api/webhook-endpoints/{id}/enable", s.require(apikey.ScopeOperator, s.audited("enable_endpoint", s.setEndpointDisabled(false))))
	s.mux.HandleFunc("POST /api/webhook-endpoints/{id}/rotate-secret", s.require(apikey.ScopeOperator, s.audited("rotate_endpoint_secret", s.rotateEndpointSecret)))
	s.mux.HandleFunc("GET /api/webhook-endpoints/{id}/deliveries", s.require(apikey.ScopeOperator, s.listDeliveries))
	s.mux.HandleFunc("POST /api/events/{id}/replay", s.require(apikey.ScopeOperator, s.audited("replay_event", s.replayEvent)))
	s.mux.HandleFunc("GET /api/audit-log", s.require(apikey.ScopeOperator, s.auditLog))
	s.mux.HandleFunc("GET /healthz", s.health)
	s.mux.HandleFunc("GET "+OpenAPIPath, serveOpenAPI)
	s.mux.HandleFunc("GET /metrics", s.require(apikey.ScopeOperator, metrics.Handler(cfg.Metrics).ServeHTTP))
	if err := s.mountConsole(cfg); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if len(cfg.WebhookSecrets) > 0 {
		if cfg.Registerer == nil {
			return nil, errors.New("api: config: Registerer is required with WebhookSecrets")
		}
		events, err := newProviderEvents(s, cfg.WebhookSecrets, providers[0], cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
		s.mux.HandleFunc("POST "+WebhookPath, events.serveDefault)
		s.mux.HandleFunc("POST "+ProviderWebhookPath("{provider}"), events.serveNamed)
	}
	return s.logRequests(s.recoverPanics(s.authenticate(http.HandlerFunc(s.route)))), nil
}

// route dispatches to the mux, and answers the requests that no route takes
// with problem+json instead of the mux's plain text.
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	// A path names a resource in one spelling only: the mux would redirect
	// "//api/orders/1001" or "/api/./orders/1001" with an HTML body.
	if canonical := path.Clean(r.URL.Path); canonical != r.URL.Path {
		writeProblem(w, s.log, wire.NewProblem(wire.ProblemNotFound, fmt.Sprintf("no resource at %s: paths are written in one form, such as %s", r.URL.Path, canonical)))
		return
	}
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	// The mux knows whether the path exists with another method (405, with
	// its Allow header) or not at all (404); only its status is kept.
	unrouted := &headerOnlyWriter{header: http.Header{}}
	s.mux.ServeHTTP(unrouted, r)
	if allow := unrouted.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	if unrouted.status == http.StatusMethodNotAllowed {
		writeProblem(w, s.log, wire.NewProblem(wire.ProblemMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path))
		return
	}
	writeProblem(w, s.log, wire.NewProblem(wire.ProblemNotFound, "no resource at "+r.URL.Path))
}

// headerOnlyWriter keeps the status and headers of a response and drops its body.
type headerOnlyWriter struct {
	header http.Header
	status int
}

func (h *headerOnlyWriter) Header() http.Header         { return h.header }
func (h *headerOnlyWriter) WriteHeader(status int)      { h.status = status }
func (h *headerOnlyWriter) Write(b []byte) (int, error) { return len(b), nil }

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	if _, _, err := s.store.OpenAttemptStats(ctx); err != nil {
		s.log.Error("health check: the database does not answer", "error", err)
		s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "the database does not answer"})
		return
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", wire.Health{Status: "ok"})
}

// serveOpenAPI answers with the API's OpenAPI document, docs/openapi.json,
// as the build embedded it.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(docs.OpenAPI)
}

func orderLocation(id int64) string {
	return "/api/orders/" + strconv.FormatInt(id, 10)
}
