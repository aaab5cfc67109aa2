package temporalserver

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

// searchAttributeCatchUp is how long every read of search attributes goes
// to the database after new ones are registered: several periods of the
// namespace registry's refresh (2s by default), after which every service's
// cached copy holds them.
const searchAttributeCatchUp = 10 * time.Second

// dynamicConfig is the server's dynamic configuration: the settings of
// Config.DynamicConfig, fixedDynamicConfig for the others, and one switch
// that changes while the server runs.
type dynamicConfig struct {
	// given are Config.DynamicConfig's settings.
	given dynamicconfig.StaticClient
	// refreshSearchAttributes makes every service read search attributes
	// from the database on each use instead of from its cache. That costs a
	// database read per workflow start, upsert and visibility write, so it
	// is on only while attributes registered on an existing database reach
	// the services' caches. A new database has its attributes before any
	// service starts and never needs it.
	refreshSearchAttributes atomic.Bool
}

// GetValue implements dynamicconfig.Client.
func (d *dynamicConfig) GetValue(key dynamicconfig.Key) []dynamicconfig.ConstrainedValue {
	if key == dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key() {
		return []dynamicconfig.ConstrainedValue{{Value: d.refreshSearchAttributes.Load()}}
	}
	if v := d.given.GetValue(key); v != nil {
		return v
	}
	return fixedDynamicConfig.GetValue(key)
}

// newDynamicConfig is the dynamic configuration with the settings given,
// by name, over the fixed ones.
func newDynamicConfig(given map[string]any) *dynamicConfig {
	d := &dynamicConfig{given: dynamicconfig.StaticClient{}}
	for name, v := range given {
		d.given[dynamicconfig.MakeKey(name)] = v
	}
	return d
}

// catchUpSearchAttributes turns on refreshSearchAttributes and returns what
// turns it off again, after the caches have had catchUp to refresh.
func (d *dynamicConfig) catchUpSearchAttributes(catchUp time.Duration) (done func()) {
	d.refreshSearchAttributes.Store(true)
	return func() {
		time.AfterFunc(catchUp, func() { d.refreshSearchAttributes.Store(false) })
	}
}

// fixedDynamicConfig tunes the server for development and tests. It is
// never modified.
var fixedDynamicConfig = dynamicconfig.StaticClient{
	// Checkout relies on Update-With-Start (an update carried by
	// ExecuteMultiOperation, which has no switch of its own) and on eager
	// workflow start. Both are on by default in this server version; pinning
	// them keeps an upgrade from turning them off unnoticed.
	dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key(): true,
	dynamicconfig.EnableEagerWorkflowStart.Key():              true,
	// Tests, the starter's timeline and the Web UI poll visibility far more
	// often than the default 10 requests per second allows.
	dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	// The per-host persistence rate limits protect a shared database cluster
	// from one host. Here every service shares one process and one SQLite
	// file, so the limits only turn load into spurious "System Persistence
	// Max QPS Reached" errors.
	dynamicconfig.FrontendPersistenceMaxQPS.Key(): 100000,
	dynamicconfig.HistoryPersistenceMaxQPS.Key():  100000,
	dynamicconfig.MatchingPersistenceMaxQPS.Key(): 100000,
	// With one matching host, task queue partitions only add forwarding hops
	// between a task and the poller waiting for it.
	dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
	dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
	// The transfer queue hands new workflow and activity tasks to matching.
	// Its reads are limited per history shard, 20 a second by default, which
	// a cluster spreads over hundreds of shards; this server has one, so a
	// new task waited up to 50ms for the next read, and a workflow with one
	// activity took about 100ms instead of 20ms.
	dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
}

// startTemporal builds and starts the four Temporal services.
// frontendDial is the frontend's address as the other services dial it.
func startTemporal(cfg Config, frontendDial string, ports *reservedPorts, st *store, dc *dynamicConfig, logger *slog.Logger) (temporal.Server, error) {
	internal := func(port int) string { return net.JoinHostPort(internalHost, strconv.Itoa(port)) }

	conf := &config.Config{
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: st.sql}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace:    false,
			FailoverVersionIncrement: 10,
			MasterClusterName:        clusterName,
			CurrentClusterName:       clusterName,
			ClusterInformation: map[string]cluster.ClusterInformation{
				clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendDial},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			string(primitives.FrontendService): {RPC: config.RPC{GRPCPort: ports.frontend, BindOnIP: cfg.Host}},
			string(primitives.HistoryService):  {RPC: config.RPC{GRPCPort: ports.history, BindOnIP: internalHost}},
			string(primitives.MatchingService): {RPC: config.RPC{GRPCPort: ports.matching, BindOnIP: internalHost}},
			string(primitives.WorkerService):   {RPC: config.RPC{GRPCPort: ports.sysworker, BindOnIP: internalHost}},
		},
		// The system worker (which runs the server's own workflows) dials the
		// frontend as an ordinary client.
		PublicClient: config.PublicClient{HostPort: frontendDial},
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"

	// Static membership: every service is one known host in this process, so
	// there is no ringpop gossip and no membership port to allocate.
	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: static.SingleLocalHost(frontendDial),
		primitives.HistoryService:  static.SingleLocalHost(internal(ports.history)),
		primitives.MatchingService: static.SingleLocalHost(internal(ports.matching)),
		primitives.WorkerService:   static.SingleLocalHost(internal(ports.sysworker)),
	}

	var srv temporal.Server
	err := catchFatal(func() error {
		var err error
		srv, err = temporal.NewServer(
			temporal.WithConfig(conf),
			temporal.ForServices(temporal.DefaultServices),
			temporal.WithStaticHosts(hosts),
			temporal.WithLogger(serverLogger{logger}),
			temporal.WithDynamicConfigClient(dc),
		)
		if err != nil {
			return fmt.Errorf("temporalserver: build server: %w", err)
		}
		if err := srv.Start(); err != nil {
			return fmt.Errorf("temporalserver: start server: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}
