package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/cluster"
	"chargeonce/dev/stack"
	"chargeonce/internal/cli"
	"chargeonce/internal/codec"
	"chargeonce/internal/temporalclient"
	"chargeonce/internal/webhook"
	"chargeonce/store"
)

// FaultAPIKill is the kind of an API instance killed with SIGKILL while
// checkouts run through it.
const FaultAPIKill = "API SIGKILL"

// External is a stack that runs outside the run, such as the local cluster
// (package cluster): the run drives it through the URLs of its parts, and
// injects real process faults through Processes.
type External struct {
	// APIURLs are the checkout APIs; customers spread over them.
	APIURLs []string
	// ProviderURL is the fake provider, whose admin API switches its mode,
	// forgets keys and reports what it was asked.
	ProviderURL string
	// BackupURL is the backup fake provider (Config.Backup), whose
	// payments the stack's workers and APIs route as stack.BackupName, by
	// a routing file of both; empty without one.
	BackupURL string
	// Temporal is where the checker reads the workflows, and how it
	// connects.
	Temporal temporalclient.Config
	// DatabaseURL is the merchant database the workers and the APIs use.
	DatabaseURL string
	// CodecKeys is their payload keyring.
	CodecKeys string
	// CardHashKey is the key of their card hashes, which the run's own
	// checkouts must share so that a customer's retry finds its attempt.
	CardHashKey string
	// WebhookSecret is the secret the APIs verify the provider's events
	// with, whsec_….
	WebhookSecret string
	// APIKey is a key of the APIs with every scope; the customers send it.
	APIKey string
	// Processes kills and starts the stack's processes by the names below.
	Processes Processes
	// Workers and APIs name the processes of the payment workers and of
	// the checkout APIs; TemporalServer and Postgres those of the Temporal
	// server and of PostgreSQL.
	Workers, APIs            []string
	TemporalServer, Postgres string
	// BuildID is the version the Workers run; Versions starts the workers
	// of other versions, for Config.Deploys.
	BuildID  string
	Versions WorkerVersions
}

// Processes controls the processes of an external stack.
type Processes interface {
	// Kill kills the named process with SIGKILL, as a crash does.
	Kill(name string) error
	// StopProcess stops the named process cleanly.
	StopProcess(name string) error
	// StartAgain starts the named process again and returns once it
	// answers.
	StartAgain(ctx context.Context, name string) error
}

// Env are the variables an external stack's services need for a run of
// cfg, by service: the workers' payment timing, the APIs' checkout budget,
// the provider's key retention and event retry schedule. The stack must
// start with them.
func Env(cfg Config) map[string]map[string]string {
	cfg = cfg.withDefaults()
	worker := map[string]string{}
	for flag, value := range workerSettings(cfg) {
		worker[cli.EnvName(flag)] = value
	}
	return map[string]map[string]string{
		cluster.ServiceWorker: worker,
		cluster.ServiceAPI:    {cli.EnvName("checkout-budget"): cfg.CheckoutBudget.String()},
		cluster.ServiceProvider: {
			cli.FakeProviderEnvName("retention"):        cfg.Retention.String(),
			cli.FakeProviderEnvName("hold-window"):      holdWindow.String(),
			cli.FakeProviderEnvName("webhook-schedule"): webhookSchedule.String(),
		},
	}
}

// externalStack is the target of a run on an External stack.
type externalStack struct {
	ext    External
	store  store.Store
	client client.Client
	next   atomic.Uint64
}

// APIURL spreads the requests over the APIs, one after the other.
func (e *externalStack) APIURL() string {
	return e.ext.APIURLs[int(e.next.Add(1))%len(e.ext.APIURLs)]
}

func (e *externalStack) APIKey() string        { return e.ext.APIKey }
func (e *externalStack) ProviderURL() string   { return e.ext.ProviderURL }
func (e *externalStack) BackupURL() string     { return e.ext.BackupURL }
func (e *externalStack) Store() store.Store    { return e.store }
func (e *externalStack) Client() client.Client { return e.client }

// RestartTemporal kills the Temporal server with SIGKILL and starts it
// again on its database.
func (e *externalStack) RestartTemporal(ctx context.Context) error {
	if err := e.ext.Processes.Kill(e.ext.TemporalServer); err != nil {
		return err
	}
	return e.ext.Processes.StartAgain(ctx, e.ext.TemporalServer)
}

func (e *externalStack) WebhookSecret() (webhook.Secret, error) {
	return webhook.ParseSecret(e.ext.WebhookSecret)
}

// embeddedStack is the target of a run on the stack it starts itself.
type embeddedStack struct{ *stack.Stack }

func (s embeddedStack) WebhookSecret() (webhook.Secret, error) {
	secret, _, err := webhook.LoadOrCreateSecretFile(s.WebhookSecretFile())
	return secret, err
}

// RunExternal runs the customers and the faults against an external stack
// that was started with Env(cfg), and checks every invariant. The run's
// worker kills, Temporal restarts, PostgreSQL restarts and API kills are
// real process faults.
func RunExternal(ctx context.Context, cfg Config, ext External) (Summary, error) {
	// The stack's database is the run's: it is not created for the run.
	cfg.DatabaseURL = ext.DatabaseURL
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if len(ext.APIURLs) == 0 || ext.ProviderURL == "" || ext.Temporal.Address == "" || ext.DatabaseURL == "" || ext.CodecKeys == "" || ext.CardHashKey == "" || ext.APIKey == "" {
		return Summary{}, errors.New("chaos: an external stack needs the URLs of its APIs, provider, Temporal and database, its payload and card-hash keys and an API key")
	}
	if cfg.Backup != (ext.BackupURL != "") {
		return Summary{}, errors.New("chaos: Config.Backup and an external stack's backup provider (External.BackupURL) go together: the run drives and checks every provider the stack routes payments to")
	}
	if ext.Processes == nil && (cfg.WorkerKills+cfg.ServerRestarts+cfg.PostgresRestarts+cfg.APIKills > 0) {
		return Summary{}, errors.New("chaos: process faults on an external stack need its processes")
	}
	if (cfg.WorkerKills > 0 && len(ext.Workers) == 0) || (cfg.APIKills > 0 && len(ext.APIs) == 0) ||
		(cfg.ServerRestarts > 0 && ext.TemporalServer == "") || (cfg.PostgresRestarts > 0 && ext.Postgres == "") {
		return Summary{}, errors.New("chaos: process faults on an external stack need the names of the processes they hit")
	}
	if len(cfg.Deploys) > 0 && (ext.Versions == nil || ext.BuildID == "" || len(ext.Workers) == 0 || ext.Processes == nil) {
		return Summary{}, errors.New("chaos: deploys need an external stack that starts worker versions, its workers' names and build ID, and its processes")
	}
	cfg = cfg.withDefaults()
	began := time.Now()
	keyring, err := codec.ParseKeyring(ext.CodecKeys)
	if err != nil {
		return Summary{}, err
	}
	st, err := store.Open(ctx, ext.DatabaseURL)
	if err != nil {
		return Summary{}, err
	}
	defer st.Close()
	tc, err := temporalclient.Dial(ctx, ext.Temporal,
		temporalclient.Options{DataConverter: codec.NewDataConverter(keyring)})
	if err != nil {
		return Summary{}, err
	}
	defer tc.Close()
	hasher, err := chargeonce.ParseCardHashKey(ext.CardHashKey)
	if err != nil {
		return Summary{}, fmt.Errorf("chaos: %w", err)
	}
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: tc, CardHasher: hasher})
	if err != nil {
		return Summary{}, err
	}
	if err := awaitPublishedTiming(ctx, svc, cfg.Timing); err != nil {
		return Summary{}, err
	}
	lost, closeLost, err := lostStartCheckout(st, hasher)
	if err != nil {
		return Summary{}, err
	}
	defer closeLost()
	r := newRun(cfg, &externalStack{ext: ext, store: st, client: tc}, lost)
	r.processes = ext.Processes
	r.workerNames, r.apiNames, r.postgresName = ext.Workers, ext.APIs, ext.Postgres
	r.versions, r.version = ext.Versions, ext.BuildID
	if err := r.execute(ctx); err != nil {
		return Summary{}, err
	}
	return r.finish(ctx, began)
}

// restartProcess kills the named process, keeps it down for a moment, and
// starts it again. While it is down, and for outageGrace after, an
// answer that never came is the crash's: the customer asks again.
func (r *run) restartProcess(ctx context.Context, name string) error {
	r.mu.Lock()
	r.outages = append(r.outages, outage{begin: time.Now()})
	i := len(r.outages) - 1
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.outages[i].end = time.Now().Add(outageGrace)
		r.mu.Unlock()
	}()
	if err := r.processes.Kill(name); err != nil {
		return err
	}
	select {
	case <-time.After(restartPause):
	case <-ctx.Done():
		return nil
	}
	return r.processes.StartAgain(ctx, name)
}

// restartDatabase restarts the PostgreSQL server: through the external
// stack's processes, or with the restart command.
func (r *run) restartDatabase(ctx context.Context) error {
	if r.processes == nil {
		return r.runRestartCommand(ctx)
	}
	if err := r.processes.StopProcess(r.postgresName); err != nil {
		return err
	}
	return r.processes.StartAgain(ctx, r.postgresName)
}

// RunOnCluster starts the local cluster (package cluster) in dataDir on
// unused ports, with the run's timing, runs RunExternal against it with
// every process fault, and stops it. It builds the cluster's binaries, so
// it must be called from inside the module.
func RunOnCluster(ctx context.Context, cfg Config, dataDir string) (Summary, error) {
	ports, err := cluster.FreePorts()
	if err != nil {
		return Summary{}, err
	}
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dataDir, Ports: ports, Env: Env(cfg), Logger: cfg.Logger})
	if err != nil {
		return Summary{}, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil && cfg.Logger != nil {
			cfg.Logger.Warn("cluster did not stop cleanly", "error", err)
		}
	}()
	return RunExternal(ctx, cfg, ClusterStack(c))
}

// ClusterStack is the running cluster c as an external stack, with every
// process a fault can hit and the versions a deploy starts.
func ClusterStack(c *cluster.Cluster) External {
	return External{
		APIURLs:        c.APIURLs(),
		ProviderURL:    c.ProviderURL(),
		Temporal:       c.TemporalClient(),
		DatabaseURL:    c.DatabaseURL(),
		CodecKeys:      c.CodecKeys(),
		CardHashKey:    c.CardHashKey(),
		WebhookSecret:  c.WebhookSecret(),
		APIKey:         c.APIKey(),
		Processes:      c,
		Workers:        c.ProcessNames(cluster.ServiceWorker),
		APIs:           c.ProcessNames(cluster.ServiceAPI),
		TemporalServer: c.ProcessNames(cluster.ServiceTemporal)[0],
		Postgres:       c.ProcessNames(cluster.ServicePostgres)[0],
		BuildID:        cluster.ClusterBuildID,
		Versions:       c,
	}
}
