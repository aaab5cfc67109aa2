package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cli"
)

// The server stores its membership ports as PostgreSQL smallints, and
// refuses to start on a port above 32767.
func TestFreePorts_AreDistinctAndFitASmallint(t *testing.T) {
	p, err := FreePorts()
	require.NoError(t, err)
	all := append([]int{p.Postgres, p.Temporal, p.UI, p.Provider}, p.APIs[:]...)
	all = append(all, p.Workers[:]...)
	all = append(all, p.TemporalInternal[:]...)
	seen := map[int]bool{}
	for _, port := range all {
		require.True(t, port >= 20000 && port <= 32767, "port %d", port)
		require.False(t, seen[port], "port %d twice", port)
		seen[port] = true
	}
}

func TestParts_GiveEachReplicaItsOwnListenPort(t *testing.T) {
	p := DefaultPorts()
	for _, part := range Parts(p, Layout{Dir: "/data"}, Secrets{CodecKeys: "k1:key", WebhookSecret: "whsec_test"}) {
		if part.Replicas < 2 {
			continue
		}
		listens := map[string]bool{}
		for i := range part.Replicas {
			listens[replicaEnv(part, p, i)[cli.EnvName("listen")]] = true
		}
		require.Len(t, listens, part.Replicas, part.Service)
	}
}

// The chaos runs kill and start the processes by these names.
func TestParts_NameEveryProcessOnce(t *testing.T) {
	seen := map[string]string{}
	for _, part := range Parts(DefaultPorts(), Layout{Dir: "/data"}, Secrets{}) {
		names := part.ProcessNames()
		require.Len(t, names, part.Replicas, part.Service)
		for _, name := range names {
			require.NotContains(t, seen, name, "%s and %s", part.Service, seen[name])
			seen[name] = part.Service
		}
	}
	require.Equal(t, ServiceWorker, seen["worker-2"])
	require.Equal(t, ServiceTemporal, seen["temporal"])
}
