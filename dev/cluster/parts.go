// Package cluster runs chargeonce in its production shape on one machine,
// from real parts, each its own OS process with its own log: PostgreSQL
// from Debian's packages, the Temporal server built from its module at
// go.mod's version with its schemas set up by the server's sql tool, the
// namespace and search attributes set up by temporal-setup, the Temporal
// Web UI, two payment workers, two checkout APIs and the fake provider.
//
// The parts are the services of docker-compose.yml, declared once here
// (Parts) so that a test holds the two in step: the same services, versions,
// environment variables and commands. Whatever else drives the cluster, such
// as the chaos runs, takes its services' and processes' names from here.
package cluster

import (
	"errors"
	"fmt"
	"maps"
	mathrand "math/rand/v2"
	"net"
	"strconv"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/internal/cli"
)

// PostgresVersion is the major version of PostgreSQL the cluster runs, from
// Debian's package, and the one docker-compose.yml pins.
const PostgresVersion = "15"

// Module versions come from go.mod; these are the packages the cluster
// builds its Temporal parts from.
const (
	ServerPackage  = "go.temporal.io/server/cmd/server"
	SQLToolPackage = "go.temporal.io/server/cmd/tools/sql"
	UIPackage      = "github.com/temporalio/ui-server/v2/cmd/server"
)

// The services of the cluster, as docker-compose.yml names them.
const (
	ServicePostgres       = "postgresql"
	ServiceTemporalSchema = "temporal-schema"
	ServiceTemporal       = "temporal"
	ServiceTemporalSetup  = "temporal-setup"
	ServiceTemporalUI     = "temporal-ui"
	ServiceProvider       = "fakeprovider"
	ServiceWorker         = "worker"
	ServiceAPI            = "api"
)

// Namespace is the Temporal namespace of the cluster's workflows.
const Namespace = "default"

// Part is one service of the cluster: a process, or a job that runs to
// completion before the parts after it start.
type Part struct {
	// Service is the docker-compose.yml service the part is.
	Service string
	// Replicas is how many processes run the part.
	Replicas int
	// Job is a part that runs once to completion at every start.
	Job bool
	// Package is the Go package the binary is built from: a command of this
	// module (chargeonce/cmd/worker) or of a Temporal module.
	Package string
	// Binary is the file name Package is built to, in the cluster's bin
	// directory; for PostgreSQL, the server in Debian's binaries.
	Binary string
	// Entrypoint and Command are the compose service's, in the same words.
	// A Command that starts with /deploy/ is a file of the module's deploy
	// directory, which compose mounts there.
	Entrypoint, Command []string
	// Env is the environment the compose service sets, with the values
	// that fit one machine. Every name is one compose sets too.
	Env map[string]string
	// Local is what only the cluster sets, because compose gives it by
	// other means: a port on the shared loopback, a data file where
	// compose has a volume, a path inside the image.
	Local map[string]string
}

// ProcessNames are the names of the part's processes: the service's name,
// or for each of several replicas the service's name and the replica's
// number from 1, such as worker-2.
func (p Part) ProcessNames() []string {
	if p.Replicas == 1 {
		return []string{p.Service}
	}
	names := make([]string, p.Replicas)
	for i := range names {
		names[i] = p.Service + "-" + strconv.Itoa(i+1)
	}
	return names
}

// Ports are the loopback ports of the cluster's parts.
type Ports struct {
	Postgres, Temporal, UI, Provider int
	// APIs and Workers are one port per instance; a worker's port serves
	// /healthz, /metrics and the payload codec.
	APIs, Workers [2]int
	// TemporalInternal are the ports of the server's other services
	// (frontend HTTP, membership, history, matching, worker), which must
	// not collide with another server on the machine.
	TemporalInternal [8]int
}

// DefaultPorts are the ports docker-compose.yml publishes, and PostgreSQL
// beside the one .ci/postgres.sh runs on 5432.
func DefaultPorts() Ports {
	return Ports{
		Postgres: 5433, Temporal: 7233, UI: 8233, Provider: 8099,
		APIs: [2]int{8080, 8081}, Workers: [2]int{9090, 9091},
		TemporalInternal: [8]int{7243, 6933, 7234, 6934, 7235, 6935, 7239, 6939},
	}
}

// FreePorts are unused loopback ports, for a cluster that must not collide
// with anything else on the machine (tests, chaos runs, benchmarks). They
// are drawn below the kernel's ephemeral range, which outgoing connections
// take from, and below 32768: the server stores its membership ports as
// PostgreSQL smallints.
func FreePorts() (Ports, error) {
	all, err := freePorts(16)
	if err != nil {
		return Ports{}, err
	}
	p := Ports{Postgres: all[0], Temporal: all[1], UI: all[2], Provider: all[3],
		APIs: [2]int{all[4], all[5]}, Workers: [2]int{all[6], all[7]}}
	copy(p.TemporalInternal[:], all[8:16])
	return p, nil
}

// freePorts are n unused loopback ports, drawn as FreePorts says.
func freePorts(n int) ([]int, error) {
	all := make([]int, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, ln := range listeners {
			_ = ln.Close()
		}
	}()
	for i := range all {
		for tries := 0; ; tries++ {
			if tries == 1000 {
				return nil, errors.New("cluster: no unused port between 20000 and 32767")
			}
			ln, err := net.Listen("tcp", addr(20000+mathrand.IntN(12768)))
			if err == nil {
				listeners = append(listeners, ln)
				all[i] = ln.Addr().(*net.TCPAddr).Port
				break
			}
		}
	}
	return all, nil
}

// Host is the interface every part listens on.
const Host = "127.0.0.1"

func addr(port int) string { return net.JoinHostPort(Host, strconv.Itoa(port)) }

func httpURL(port int) string { return "http://" + addr(port) }

// Database credentials, as docker-compose.yml and deploy/postgres-init.sql
// set them.
const (
	temporalUser = "temporal"
	appURLFormat = "postgres://chargeonce:chargeonce@%s/chargeonce?sslmode=disable"
)

// Secrets are what the cluster generates at its first start and keeps in its
// data directory.
type Secrets struct {
	// CodecKeys is the payload keyring of the workers and the APIs.
	CodecKeys string
	// CardHashKey is the key of the card hashes of the workers and the
	// APIs.
	CardHashKey string
	// CodecToken is what the workers' codec asks of its callers; the Web
	// UI's codec endpoint carries it.
	CodecToken string
	// WebhookSecret signs the fake provider's events, which the APIs verify.
	WebhookSecret string
}

// Parts are the cluster's parts in start order, on the ports p, with their
// files where l says, and the secrets sec.
func Parts(p Ports, l Layout, sec Secrets) []Part {
	pg := strconv.Itoa(p.Postgres)
	temporal := map[string]string{cli.EnvName("temporal-address"): addr(p.Temporal), cli.EnvName("temporal-namespace"): Namespace}
	backend := func(extra map[string]string) map[string]string {
		env := map[string]string{
			cli.EnvName("database-url"):  fmt.Sprintf(appURLFormat, addr(p.Postgres)),
			cli.EnvName("codec-keys"):    sec.CodecKeys,
			cli.EnvName("card-hash-key"): sec.CardHashKey,
			cli.EnvName("log-format"):    "json",
		}
		maps.Copy(env, temporal)
		maps.Copy(env, extra)
		return env
	}
	ti := p.TemporalInternal
	return []Part{
		{
			Service: ServicePostgres, Replicas: 1, Binary: "postgres",
			Env:   map[string]string{"POSTGRES_USER": temporalUser, "POSTGRES_PASSWORD": temporalUser},
			Local: map[string]string{"PGDATA": l.Postgres(), "PGPORT": pg},
		},
		{
			Service: ServiceTemporalSchema, Replicas: 1, Job: true, Package: SQLToolPackage, Binary: "temporal-sql-tool",
			Entrypoint: []string{"/bin/sh"}, Command: []string{"/deploy/temporal-schema.sh"},
			Local: map[string]string{
				"POSTGRES_SEEDS": Host, "DB_PORT": pg,
				"SCHEMA_DIR": l.Schema(), "PATH": l.Bin() + ":/usr/bin:/bin",
			},
		},
		{
			Service: ServiceTemporal, Replicas: 1, Package: ServerPackage, Binary: "temporal-server",
			Command: []string{"temporal-server", "start"},
			Env: map[string]string{
				"DB": "postgres12", "DB_PORT": pg, "POSTGRES_USER": temporalUser, "POSTGRES_PWD": temporalUser,
				"POSTGRES_SEEDS": Host, "BIND_ON_IP": Host,
			},
			Local: with(map[string]string{
				"FRONTEND_GRPC_PORT": strconv.Itoa(p.Temporal), "FRONTEND_HTTP_PORT": strconv.Itoa(ti[0]),
				"FRONTEND_MEMBERSHIP_PORT": strconv.Itoa(ti[1]),
				"HISTORY_GRPC_PORT":        strconv.Itoa(ti[2]), "HISTORY_MEMBERSHIP_PORT": strconv.Itoa(ti[3]),
				"MATCHING_GRPC_PORT": strconv.Itoa(ti[4]), "MATCHING_MEMBERSHIP_PORT": strconv.Itoa(ti[5]),
				"WORKER_GRPC_PORT": strconv.Itoa(ti[6]), "WORKER_MEMBERSHIP_PORT": strconv.Itoa(ti[7]),
				"DYNAMIC_CONFIG_FILE_PATH": l.DynamicConfig(),
			}, serverTLSEnv(l)),
		},
		{
			Service: ServiceTemporalSetup, Replicas: 1, Job: true, Package: "chargeonce/cmd/temporal-setup", Binary: "temporal-setup",
			Command: []string{"temporal-setup"},
			Env:     maps.Clone(temporal),
			Local:   clientTLSEnv(l, ServiceTemporalSetup),
		},
		{
			Service: ServiceTemporalUI, Replicas: 1, Package: UIPackage, Binary: "temporal-ui-server",
			Command: []string{"temporal-ui-server", "--root", l.UI(), "--env", "docker", "start"},
			Env: map[string]string{
				"TEMPORAL_ADDRESS": addr(p.Temporal), "TEMPORAL_CODEC_ENDPOINT": httpURL(p.Workers[0]) + "/codec/" + sec.CodecToken,
				"TEMPORAL_UI_PORT": strconv.Itoa(p.UI), "TEMPORAL_CSRF_COOKIE_INSECURE": "true",
			},
			Local: uiTLSEnv(l),
		},
		{
			Service: ServiceProvider, Replicas: 1, Package: "chargeonce/cmd/fakeprovider", Binary: "fakeprovider",
			Command: []string{"fakeprovider"},
			Env: map[string]string{
				cli.FakeProviderEnvName("addr"): addr(p.Provider), cli.FakeProviderEnvName("mode"): "normal",
				cli.FakeProviderEnvName("retention"): "24h",
				// The first API receives the events; while it is down, the
				// provider delivers them again on its retry schedule.
				cli.FakeProviderEnvName("webhook-url"):    httpURL(p.APIs[0]) + api.ProviderWebhookPath(chargeonce.DefaultProvider),
				cli.FakeProviderEnvName("webhook-secret"): sec.WebhookSecret,
			},
			Local: map[string]string{cli.FakeProviderEnvName("data-file"): l.ProviderData()},
		},
		{
			Service: ServiceWorker, Replicas: 2, Package: "chargeonce/cmd/worker", Binary: "worker",
			Command: []string{"worker"},
			Env: backend(map[string]string{
				cli.EnvName("provider-url"): httpURL(p.Provider), cli.EnvName("listen"): addr(p.Workers[0]),
				cli.EnvName("codec-cors-origin"): httpURL(p.UI), cli.EnvName("codec-token"): sec.CodecToken,
			}),
			// Compose's workers are the version of their image's binary.
			// The cluster's are rebuilt on every start, and one version
			// across its restarts carries the open runs on to the new
			// code, as dev's worker does.
			Local: with(clientTLSEnv(l, ServiceWorker), map[string]string{cli.EnvName("build-id"): ClusterBuildID}),
		},
		{
			Service: ServiceAPI, Replicas: 2, Package: "chargeonce/cmd/api", Binary: "api",
			Command: []string{"api"},
			Env: backend(map[string]string{cli.EnvName("listen"): addr(p.APIs[0]), cli.EnvName("webhook-secret"): sec.WebhookSecret,
				cli.EnvName("temporal-ui-url"): httpURL(p.UI)}),
			Local: clientTLSEnv(l, ServiceAPI),
		},
	}
}

// ClusterBuildID is the version of the Worker Deployment that the
// cluster's workers join.
const ClusterBuildID = "cluster"

// with is env with the variables of extra added.
func with(env, extra map[string]string) map[string]string {
	maps.Copy(env, extra)
	return env
}

// replicaEnv is the environment of replica i of part: the listen port of
// a replicated part is its own.
func replicaEnv(part Part, p Ports, i int) map[string]string {
	env := make(map[string]string, len(part.Env)+len(part.Local))
	maps.Copy(env, part.Env)
	maps.Copy(env, part.Local)
	switch part.Service {
	case ServiceWorker:
		env[cli.EnvName("listen")] = addr(p.Workers[i])
	case ServiceAPI:
		env[cli.EnvName("listen")] = addr(p.APIs[i])
	}
	return env
}
