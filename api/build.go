package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/hold"
	"chargeonce/internal/backend"
	"chargeonce/internal/webhook"
	"chargeonce/notify"
	"chargeonce/provider/dialect"
	"chargeonce/provider/routing"
	"chargeonce/refund"
	"chargeonce/store"
)

// Settings are the checkout API's settings: the api command's flags, or
// what the dev stack chooses.
type Settings struct {
	// CheckoutBudget is how long a checkout waits for the charge, and a
	// refund request for its send phase, before it answers pending; zero
	// means the published charge budget plus two seconds
	// (checkout.DefaultBudget).
	CheckoutBudget time.Duration
	// Routing is the routing file's providers and rules: which providers
	// new attempts go to, and the secrets of each provider's events, which
	// arrive at ProviderWebhookPath(name). Its first provider is the
	// default, whose events arrive at WebhookPath too, and which a refund
	// of a charge the books do not show goes to. The workers must reach
	// every provider it names. Nil means the one provider of Provider and
	// WebhookSecrets.
	Routing *routing.Table
	// Provider names the one provider that new attempts and refunds are
	// sent to without a Routing, which they store; empty means
	// chargeonce.DefaultProvider. Its events arrive at
	// ProviderWebhookPath(Provider), and at WebhookPath.
	Provider string
	// Finder verifies at the provider what its events claim
	// (refund.Config.Finders); nil leaves it to the settlement.
	Finder refund.Finder
	// ReferencePrefix starts every merchant reference; empty means
	// checkout.DefaultReferencePrefix.
	ReferencePrefix string
	// WebhookSecrets verify the events of the one provider without a
	// Routing (Config.WebhookSecrets); empty serves no webhook route.
	WebhookSecrets []webhook.Secret
	// EventNetworks are the internal networks that event endpoints may
	// point at (Config.EventNetworks); none by default.
	EventNetworks notify.AllowedNetworks
	// Capture is the merchant's capture mode, for the checkouts that do
	// not choose one (checkout.Config.Capture); empty means automatic.
	Capture chargeonce.CaptureMode
	// WebUI is the Temporal Web UI's base URL, which the operator's
	// console links workflows to (Config.WebUI); empty links none.
	WebUI string
}

// Services are the services behind the API's routes, for the programs
// that call them in-process as the routes do.
type Services struct {
	Checkout *checkout.Service
	Refunds  *refund.Service
	// Holds captures and voids the holds of manual captures.
	Holds *hold.Service
}

// Build builds the API that s describes on the connected backend b: the
// refund service, the service of holds' captures and voids, the checkout
// service, and the handler of every route
// (New), which serves b's registry at /metrics. The api command and the dev stack build their API
// with it, so that the two serve the same API. Given a registry that does
// not hold the API's metrics yet, each of its errors is a bad setting.
func Build(ctx context.Context, b *backend.Conn, s Settings) (http.Handler, Services, error) {
	table, err := s.routing()
	if err != nil {
		return nil, Services{}, err
	}
	name := table.Default()
	secrets := map[string][]webhook.Secret{}
	var names []string
	for _, p := range table.Providers() {
		names = append(names, p.NameOrDefault())
		if len(p.WebhookSecrets) > 0 {
			secrets[p.NameOrDefault()] = p.WebhookSecrets
		}
	}
	finders := map[string]refund.Finder{}
	if s.Finder != nil {
		finders[name] = s.Finder
	}
	refunds, err := refund.New(refund.Config{
		Store: b.Store, Temporal: b.Temporal, Finders: finders, Budget: s.CheckoutBudget,
		ReferencePrefix: s.ReferencePrefix, Logger: b.Logger,
	})
	if err != nil {
		return nil, Services{}, err
	}
	holds, err := hold.New(hold.Config{
		Store: b.Store, Temporal: b.Temporal, Budget: s.CheckoutBudget, ReferencePrefix: s.ReferencePrefix, Logger: b.Logger,
	})
	if err != nil {
		return nil, Services{}, err
	}
	svc, err := checkout.New(checkout.Config{
		Store: b.Store, Temporal: b.Temporal, CardHasher: b.CardHasher, Budget: s.CheckoutBudget, Routing: table,
		ReferencePrefix: s.ReferencePrefix, Logger: b.Logger, Registerer: b.Registry,
		Refunds: refunds, Capture: s.Capture,
	})
	if err != nil {
		return nil, Services{}, err
	}
	if _, err := svc.Timing(ctx); err != nil {
		b.Logger.Warn("checkouts answer 503 until a payment worker publishes its timing in the merchant database", "error", err)
	}
	if err := checkWorkersReach(ctx, b, table); err != nil {
		return nil, Services{}, err
	}
	h, err := New(Config{
		Checkout: svc, Refunds: refunds, Holds: holds, Store: b.Store, Metrics: b.Registry, Logger: b.Logger, Temporal: b.Temporal,
		WebhookSecrets: secrets, Providers: names, Registerer: b.Registry, EventNetworks: s.EventNetworks,
		WebUI: s.WebUI, Namespace: b.Namespace,
	})
	if err != nil {
		return nil, Services{}, err
	}
	return h, Services{Checkout: svc, Refunds: refunds, Holds: holds}, nil
}

// routing is the routing of s: its Routing, or the table of its one
// provider.
func (s Settings) routing() (*routing.Table, error) {
	if s.Routing == nil {
		one := routing.Provider{Settings: dialect.Settings{Name: s.Provider}, WebhookSecrets: s.WebhookSecrets}
		if err := chargeonce.CheckProviderName(one.NameOrDefault()); err != nil {
			return nil, fmt.Errorf("api: settings: %w", err)
		}
		return routing.Of(one), nil
	}
	if s.Provider != "" || len(s.WebhookSecrets) > 0 {
		return nil, errors.New("api: settings: a routing file names the providers and their webhook secrets; give no provider name or webhook secret besides it")
	}
	return s.Routing, nil
}

// checkWorkersReach refuses a routing that names a provider which the
// payment workers, as the last one to start published them, do not reach:
// an attempt sent there would fail, and its order would wait for a person.
// Before any worker has published its providers there is nothing to check
// against; like the timing, the routing is then checked at the API's next
// start.
func checkWorkersReach(ctx context.Context, b *backend.Conn, table *routing.Table) error {
	reached, err := b.Store.WorkerProviders(ctx)
	if errors.Is(err, store.ErrNotFound) {
		b.Logger.Warn("the routing is not checked against the providers the payment workers reach: no worker has published them yet")
		return nil
	}
	if err != nil {
		b.Logger.Warn("the routing is not checked against the providers the payment workers reach: they cannot be read", "error", err)
		return nil
	}
	for _, p := range table.Providers() {
		if name := p.NameOrDefault(); !slices.Contains(reached, name) {
			return fmt.Errorf("api: the routing sends payments to provider %q, which the payment workers do not reach (they reach %s): give the workers and the API the same routing file",
				name, strings.Join(reached, ", "))
		}
	}
	return nil
}
