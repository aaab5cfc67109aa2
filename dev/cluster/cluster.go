package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"chargeonce"
	"chargeonce/internal/apikey"
	"chargeonce/internal/cli"
	"chargeonce/internal/codec"
	"chargeonce/internal/ownerfile"
	"chargeonce/internal/temporalclient"
	"chargeonce/internal/webhook"
	"chargeonce/store"
)

// Layout is where a cluster keeps its files, under one data directory.
type Layout struct {
	// Dir is the data directory.
	Dir string
	// Repo is the module's root, where the binaries are built from and
	// deploy/ is read.
	Repo string
	// ServerModule is the directory of the Temporal server module, whose
	// schema/ the sql tool applies.
	ServerModule string
	// UIModule is the directory of the ui-server module, whose config/
	// the Web UI reads.
	UIModule string
}

// Bin is where the binaries are built.
func (l Layout) Bin() string { return filepath.Join(l.Dir, "bin") }

// Logs is where every process writes its log.
func (l Layout) Logs() string { return filepath.Join(l.Dir, "logs") }

// Postgres is PostgreSQL's data directory.
func (l Layout) Postgres() string { return filepath.Join(l.Dir, "postgres") }

// Schema is the server module's schema directory.
func (l Layout) Schema() string { return filepath.Join(l.ServerModule, "schema") }

// DynamicConfig is the Temporal server's dynamic configuration file.
func (l Layout) DynamicConfig() string { return filepath.Join(l.Dir, "temporal-dynamicconfig.yaml") }

// UI is the Web UI's root, holding its config/ directory.
func (l Layout) UI() string { return filepath.Join(l.Dir, "ui") }

// ProviderData is the fake provider's SQLite file.
func (l Layout) ProviderData() string { return filepath.Join(l.Dir, "fakeprovider.db") }

// WebhookSecretFile holds the secret of the provider's events, generated at
// the first start.
func (l Layout) WebhookSecretFile() string { return filepath.Join(l.Dir, "webhook.secret") }

// APIKeyFile holds an API key with every scope, made at the first start.
func (l Layout) APIKeyFile() string { return filepath.Join(l.Dir, apikey.FileName) }

// CodecKeyFile holds the payload keyring, generated at the first start.
func (l Layout) CodecKeyFile() string { return filepath.Join(l.Dir, "codec.key") }

// CodecTokenFile holds the token the workers' codec asks of its callers,
// generated at the first start.
func (l Layout) CodecTokenFile() string { return filepath.Join(l.Dir, "codec.token") }

// CardHashKeyFile holds the secret key of the card hashes, generated at
// the first start.
func (l Layout) CardHashKeyFile() string { return filepath.Join(l.Dir, "card-hash.key") }

// Config says where a cluster keeps its data and which ports it uses.
type Config struct {
	// DataDir keeps PostgreSQL's data, the binaries, the logs and the
	// payload key; a cluster started again on it finds its data.
	DataDir string
	// Ports are the loopback ports; zero means DefaultPorts.
	Ports Ports
	// Env adds variables to, or replaces them in, the environment of the
	// named services, such as a chaos run's short payment timing for
	// "worker".
	Env map[string]map[string]string
	// Logger tells the start's progress; nil discards.
	Logger *slog.Logger
}

// Cluster is a running cluster.
type Cluster struct {
	layout  Layout
	ports   Ports
	env     map[string]map[string]string
	secrets Secrets
	// apiKey is the key of Layout.APIKeyFile, with every scope.
	apiKey string
	// temporalHTTP reaches the frontend's HTTP API with the tools' client
	// certificate.
	temporalHTTP *http.Client
	log          *slog.Logger
	// procs are the long-running processes in start order.
	procs  []*Process
	byName map[string]*Process
}

// startTimeout bounds each wait for a part to become ready.
const startTimeout = 3 * time.Minute

// dynamicConfig pins what checkout relies on (Update-With-Start and eager
// workflow start, on by default in this version) and lets the Web UI and
// the checker poll visibility more than 10 times a second.
const dynamicConfig = `frontend.enableUpdateWorkflowExecution:
  - value: true
system.enableEagerWorkflowStart:
  - value: true
frontend.namespaceRPS.visibility:
  - value: 100
`

// Start builds the binaries, starts every part in order and waits until
// each answers. On an error it stops what it started.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("cluster: a data directory is required")
	}
	if cfg.Ports == (Ports{}) {
		cfg.Ports = DefaultPorts()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	layout, err := newLayout(ctx, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{layout: layout, ports: cfg.Ports, env: cfg.Env, log: cfg.Logger, byName: map[string]*Process{}}
	for _, dir := range []string{layout.Bin(), layout.Logs(), filepath.Join(layout.UI(), "config")} {
		if err := os.MkdirAll(dir, ownerfile.DirMode); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	if c.secrets.CodecKeys, err = codecKeys(layout.CodecKeyFile()); err != nil {
		return nil, err
	}
	if c.secrets.CodecToken, _, err = codec.LoadOrCreateTokenFile(layout.CodecTokenFile()); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.secrets.CardHashKey, _, err = ownerfile.LoadOrCreate(layout.CardHashKeyFile(), func() (string, error) { return chargeonce.NewCardHashKey(), nil }); err != nil {
		return nil, fmt.Errorf("cluster: card hash key: %w", err)
	}
	hook, _, err := webhook.LoadOrCreateSecretFile(layout.WebhookSecretFile())
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.secrets.WebhookSecret = hook.String()
	toolsTLS, err := issueCertificates(layout)
	if err != nil {
		return nil, err
	}
	c.temporalHTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: toolsTLS}}
	if err := c.build(ctx); err != nil {
		return nil, err
	}
	if err := c.writeConfigs(); err != nil {
		return nil, err
	}
	if err := c.startParts(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = c.Stop(stopCtx)
		return nil, err
	}
	if err := c.loadOrCreateAPIKey(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = c.Stop(stopCtx)
		return nil, err
	}
	return c, nil
}

// loadOrCreateAPIKey keeps a key with every scope in Layout.APIKeyFile, for
// whoever calls the APIs: the chaos runs, the benchmark and the starter.
// The APIs have migrated the merchant database by now.
func (c *Cluster) loadOrCreateAPIKey(ctx context.Context) error {
	st, err := store.Open(ctx, c.DatabaseURL())
	if err != nil {
		return fmt.Errorf("cluster: API key: %w", err)
	}
	defer st.Close()
	key, _, err := apikey.LoadOrCreateFile(ctx, st, c.layout.APIKeyFile(), "local cluster", apikey.AllScopes())
	if err != nil {
		return fmt.Errorf("cluster: API key: %w", err)
	}
	c.apiKey = key.String()
	return nil
}

// newLayout finds the module's root and the Temporal modules' directories.
func newLayout(ctx context.Context, dataDir string) (Layout, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return Layout{}, fmt.Errorf("cluster: %w", err)
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "chargeonce", "go.temporal.io/server", "github.com/temporalio/ui-server/v2").Output()
	if err != nil {
		return Layout{}, fmt.Errorf("cluster: find the modules (run it inside the chargeonce module): %w", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 3 {
		return Layout{}, fmt.Errorf("cluster: go list gave %q", out)
	}
	return Layout{Dir: dir, Repo: dirs[0], ServerModule: dirs[1], UIModule: dirs[2]}, nil
}

// codecKeys reads the payload keyring of file, generating it at the first
// start: payloads written by one start must be readable by the next.
func codecKeys(file string) (string, error) {
	keys, _, err := ownerfile.LoadOrCreate(file, codec.NewKeyringText)
	if err != nil {
		return "", fmt.Errorf("cluster: payload key: %w", err)
	}
	if _, err := codec.ParseKeyring(keys); err != nil {
		return "", fmt.Errorf("cluster: payload key %s: %w", file, err)
	}
	return keys, nil
}

// build builds every binary into the data directory; the Go build cache
// makes it quick after the first time.
func (c *Cluster) build(ctx context.Context) error {
	began := time.Now()
	for _, part := range c.Parts() {
		if part.Package == "" {
			continue
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(c.layout.Bin(), part.Binary), part.Package)
		cmd.Dir = c.layout.Repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cluster: build %s: %w\n%s", part.Package, err, out)
		}
	}
	c.log.Info("binaries built", "dir", c.layout.Bin(), "took", time.Since(began).Round(time.Second))
	return nil
}

// writeConfigs writes the Temporal server's dynamic configuration and the
// Web UI's configuration, which is the one its Docker image reads.
func (c *Cluster) writeConfigs() error {
	if err := os.WriteFile(c.layout.DynamicConfig(), []byte(dynamicConfig), 0o644); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, name := range []string{"base.yaml", "docker.yaml"} {
		raw, err := os.ReadFile(filepath.Join(c.layout.UIModule, "config", name))
		if err != nil {
			return fmt.Errorf("cluster: Web UI configuration: %w", err)
		}
		if name == "docker.yaml" {
			// The image binds every interface of its container; here the
			// UI stays on loopback like every other part.
			raw = append(raw, []byte("\nhost: "+Host+"\n")...)
		}
		if err := os.WriteFile(filepath.Join(c.layout.UI(), "config", name), raw, 0o644); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	return nil
}

// Parts are the cluster's parts.
func (c *Cluster) Parts() []Part { return Parts(c.ports, c.layout, c.secrets) }

func (c *Cluster) startParts(ctx context.Context) error {
	for _, part := range c.Parts() {
		for i, name := range part.ProcessNames() {
			p, err := c.process(part, name, i)
			if err != nil {
				return err
			}
			if part.Job {
				if err := c.runJob(ctx, p); err != nil {
					return err
				}
				continue
			}
			if err := p.Start(); err != nil {
				return err
			}
			c.procs = append(c.procs, p)
			c.byName[name] = p
			if err := c.awaitReady(ctx, part, p, i); err != nil {
				return err
			}
			c.log.Info("part started", "part", name, "log", p.Log)
		}
	}
	return nil
}

// process prepares the process of replica i of part.
func (c *Cluster) process(part Part, name string, i int) (*Process, error) {
	env := replicaEnv(part, c.ports, i)
	maps.Copy(env, c.env[part.Service])
	logFile := filepath.Join(c.layout.Logs(), name+".log")
	if part.Service == ServicePostgres {
		return c.postgresProcess(env, logFile)
	}
	// What compose runs inside its image, the cluster runs from the bin
	// directory, and the files compose mounts at /deploy from the module.
	argv := append(slices.Clone(part.Entrypoint), part.Command...)
	for i, a := range argv {
		if strings.HasPrefix(a, "/deploy/") {
			argv[i] = filepath.Join(c.layout.Repo, a)
		}
	}
	if len(part.Entrypoint) == 0 {
		argv[0] = filepath.Join(c.layout.Bin(), argv[0])
	}
	p := newProcess(name, argv[0], argv[1:], env, logFile)
	p.dir = c.layout.Dir
	return p, nil
}

// jobTimeout bounds a job.
const jobTimeout = 5 * time.Minute

func (c *Cluster) runJob(ctx context.Context, p *Process) error {
	if err := p.Start(); err != nil {
		return err
	}
	// A stop asked for meanwhile ends the job too.
	stop := context.AfterFunc(ctx, func() { _ = p.Stop(stopTimeout) })
	defer stop()
	if err := p.Wait(jobTimeout); err != nil {
		_ = p.Kill()
		return errors.Join(ctx.Err(), err)
	}
	c.log.Info("job done", "part", p.Name, "log", p.Log)
	return ctx.Err()
}

// awaitReady waits until replica i of part answers, and keeps the probe
// for the process's next start.
func (c *Cluster) awaitReady(ctx context.Context, part Part, p *Process, i int) error {
	switch part.Service {
	case ServicePostgres:
		p.ready = c.initPostgres
	case ServiceTemporal:
		p.ready = c.temporalServes
	case ServiceTemporalUI:
		p.ready = httpOK(httpURL(c.ports.UI) + "/healthz")
	case ServiceProvider:
		p.ready = httpOK(httpURL(c.ports.Provider) + "/_admin/mode")
	case ServiceWorker:
		p.ready = httpOK(httpURL(c.ports.Workers[i]) + "/healthz")
	case ServiceAPI:
		p.ready = httpOK(httpURL(c.ports.APIs[i]) + "/healthz")
	}
	return p.awaitReady(ctx)
}

func httpOK(target string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", target, resp.Status)
		}
		return nil
	}
}

// postgresBin is the directory of Debian's PostgreSQL binaries.
func postgresBin() (string, error) {
	dir := filepath.Join("/usr/lib/postgresql", PostgresVersion, "bin")
	if _, err := os.Stat(filepath.Join(dir, "postgres")); err != nil {
		return "", fmt.Errorf("cluster: PostgreSQL %s is not installed (apt-get install postgresql-%s, or run .ci/postgres.sh): %w",
			PostgresVersion, PostgresVersion, err)
	}
	return dir, nil
}

// postgresProcess initialises PostgreSQL's data directory at the first
// start and returns the server's process. PostgreSQL refuses to run as
// root, so as root it runs as Debian's postgres user.
func (c *Cluster) postgresProcess(env map[string]string, logFile string) (*Process, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	data := env["PGDATA"]
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("cluster: PostgreSQL runs as the postgres user: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := c.initdb(bin, data, env, cred); err != nil {
			return nil, err
		}
	}
	p := newProcess(ServicePostgres, filepath.Join(bin, "postgres"), []string{
		"-D", data, "-p", env["PGPORT"], "-c", "listen_addresses=" + Host, "-c", "unix_socket_directories=" + data,
	}, nil, logFile)
	// Fast shutdown: roll back open transactions and close connections.
	p.stopSignal, p.cred = syscall.SIGINT, cred
	return p, nil
}

func (c *Cluster) initdb(bin, data string, env map[string]string, cred *syscall.Credential) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if cred != nil {
		if err := reachable(filepath.Dir(data)); err != nil {
			return err
		}
	}
	pwfile := filepath.Join(data, "..", "postgres.pw")
	if err := os.WriteFile(pwfile, []byte(env["POSTGRES_PASSWORD"]+"\n"), 0o600); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	defer os.Remove(pwfile)
	if cred != nil {
		for _, f := range []string{data, pwfile} {
			if err := os.Chown(f, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
		}
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", env["POSTGRES_USER"], "--pwfile", pwfile,
		"--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(data)
		return fmt.Errorf("cluster: initdb: %w\n%s", err, out)
	}
	c.log.Info("PostgreSQL initialised", "dir", data)
	return nil
}

// reachable checks that another user can reach dir, as PostgreSQL's user
// must reach its data directory; the cluster's own directory is opened up.
func reachable(dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		if info.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("cluster: PostgreSQL runs as the postgres user, who cannot enter %s (mode %v); put the data directory elsewhere", d, info.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// initPostgres connects as the superuser, and runs deploy/postgres-init.sql
// unless its role exists already: compose runs it once, when the volume
// is created.
func (c *Cluster) initPostgres(ctx context.Context) error {
	admin := fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable", temporalUser, temporalUser, addr(c.ports.Postgres))
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = 'chargeonce')").Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(c.layout.Repo, "deploy", "postgres-init.sql"))
	if err != nil {
		return err
	}
	// CREATE DATABASE cannot run in the transaction that one multi-statement
	// query is, so each statement goes alone.
	for _, stmt := range strings.Split(string(raw), ";") {
		if sql := stripComments(stmt); sql != "" {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return fmt.Errorf("deploy/postgres-init.sql: %w", err)
			}
		}
	}
	return nil
}

func stripComments(stmt string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line + "\n")
		}
	}
	return strings.TrimSpace(b.String())
}

// stopTimeout bounds the clean stop of one process.
const stopTimeout = 30 * time.Second

// Stop stops every process, the last started first, each cleanly unless
// it overruns its time; the data stays for the next start.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		timeout := stopTimeout
		if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
			timeout = max(time.Until(d), time.Second)
		}
		if err := c.procs[i].Stop(timeout); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Process returns the process named like worker-1, api-2, temporal or
// postgresql (Part.ProcessNames), or nil.
func (c *Cluster) Process(name string) *Process { return c.byName[name] }

// ProcessNames are the names of the processes of service, in start order;
// none for a job or a service the cluster does not run.
func (c *Cluster) ProcessNames(service string) []string {
	for _, part := range c.Parts() {
		if part.Service == service && !part.Job {
			return part.ProcessNames()
		}
	}
	return nil
}

// Processes are the long-running processes in start order.
func (c *Cluster) Processes() []*Process { return c.procs }

// Kill kills the named process with SIGKILL, as a crash does.
func (c *Cluster) Kill(name string) error {
	p := c.byName[name]
	if p == nil {
		return fmt.Errorf("cluster: no process %q", name)
	}
	return p.Kill()
}

// StopProcess stops the named process cleanly.
func (c *Cluster) StopProcess(name string) error {
	p := c.byName[name]
	if p == nil {
		return fmt.Errorf("cluster: no process %q", name)
	}
	return p.Stop(stopTimeout)
}

// StartAgain starts the named process, stopped or killed before, and waits
// until it answers.
func (c *Cluster) StartAgain(ctx context.Context, name string) error {
	p := c.byName[name]
	if p == nil {
		return fmt.Errorf("cluster: no process %q", name)
	}
	if err := p.Start(); err != nil {
		return err
	}
	return p.awaitReady(ctx)
}

// StartWorkerVersion starts the workers of another version of the Worker
// Deployment beside the cluster's own, as a blue-green deploy does: as many
// as the cluster runs, from binary, with build ID buildID and the cluster's
// worker environment, each on an unused port. It returns their process
// names, worker-<build ID>-1 and on, which Kill, StopProcess and StartAgain
// take; Stop stops them with the rest.
func (c *Cluster) StartWorkerVersion(ctx context.Context, buildID, binary string) ([]string, error) {
	if err := chargeonce.CheckBuildID(buildID); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	i := slices.IndexFunc(c.Parts(), func(p Part) bool { return p.Service == ServiceWorker })
	part := c.Parts()[i]
	ports, err := freePorts(part.Replicas)
	if err != nil {
		return nil, err
	}
	names := make([]string, part.Replicas)
	for r := range names {
		names[r] = fmt.Sprintf("%s-%s-%d", ServiceWorker, buildID, r+1)
		if c.byName[names[r]] != nil {
			return nil, fmt.Errorf("cluster: the workers of version %s run already", buildID)
		}
		env := replicaEnv(part, c.ports, r)
		maps.Copy(env, c.env[part.Service])
		env[cli.EnvName("listen")] = addr(ports[r])
		env[cli.EnvName("build-id")] = buildID
		p := newProcess(names[r], binary, part.Command[1:], env, filepath.Join(c.layout.Logs(), names[r]+".log"))
		p.dir = c.layout.Dir
		p.ready = httpOK(httpURL(ports[r]) + "/healthz")
		if err := p.Start(); err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.byName[p.Name] = p
		if err := p.awaitReady(ctx); err != nil {
			return nil, err
		}
		c.log.Info("worker version started", "part", p.Name, "build_id", buildID, "log", p.Log)
	}
	return names, nil
}

// temporalServes probes the frontend's HTTP API, which answers once the
// server's services have joined and the namespace is loaded; before the
// first setup the namespace may be missing, which is an answer too. It
// takes mutual TLS like the frontend's gRPC port.
func (c *Cluster) temporalServes(ctx context.Context) error {
	target := "https://" + addr(c.ports.TemporalInternal[0]) + "/api/v1/namespaces/" + Namespace
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := c.temporalHTTP.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	return nil
}

// Layout is where the cluster keeps its files.
func (c *Cluster) Layout() Layout { return c.layout }

// Ports are the cluster's ports.
func (c *Cluster) Ports() Ports { return c.ports }

// CodecKeys is the payload keyring of the workers and the APIs.
func (c *Cluster) CodecKeys() string { return c.secrets.CodecKeys }

// WebhookSecret is the secret that signs the fake provider's events.
func (c *Cluster) WebhookSecret() string { return c.secrets.WebhookSecret }

// CardHashKey is the key of the card hashes that the workers and the APIs
// keep, kept in Layout.CardHashKeyFile.
func (c *Cluster) CardHashKey() string { return c.secrets.CardHashKey }

// APIKey is an API key with every scope, kept in Layout.APIKeyFile.
func (c *Cluster) APIKey() string { return c.apiKey }

// APIURLs are the base URLs of the checkout APIs.
func (c *Cluster) APIURLs() []string {
	return []string{httpURL(c.ports.APIs[0]), httpURL(c.ports.APIs[1])}
}

// WorkerURLs are the base URLs of the workers' /healthz, /metrics and codec.
func (c *Cluster) WorkerURLs() []string {
	return []string{httpURL(c.ports.Workers[0]), httpURL(c.ports.Workers[1])}
}

// ProviderURL is the fake provider's base URL.
func (c *Cluster) ProviderURL() string { return httpURL(c.ports.Provider) }

// UIURL is the Temporal Web UI's base URL.
func (c *Cluster) UIURL() string { return httpURL(c.ports.UI) }

// TemporalAddress is the Temporal frontend's host:port.
func (c *Cluster) TemporalAddress() string { return addr(c.ports.Temporal) }

// TemporalClient is how a tool outside the parts (a checker, a benchmark)
// reaches the frontend: over mutual TLS, with the tools' certificate.
func (c *Cluster) TemporalClient() temporalclient.Config {
	return c.layout.TemporalClient(c.TemporalAddress(), ToolsClient)
}

// DatabaseURL is the merchant database.
func (c *Cluster) DatabaseURL() string { return fmt.Sprintf(appURLFormat, addr(c.ports.Postgres)) }
