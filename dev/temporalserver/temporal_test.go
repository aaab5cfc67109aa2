package temporalserver

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

func TestDynamicConfig_GivenSettingsReplaceTheFixedOnesByName(t *testing.T) {
	col := dynamicconfig.NewCollection(newDynamicConfig(map[string]any{
		"system.enableDeploymentVersions": false,
		"history.persistenceMaxQPS":       50,
	}), log.NewNoopLogger())
	require.False(t, dynamicconfig.EnableDeploymentVersions.Get(col)(DefaultNamespace))
	require.Equal(t, 50, dynamicconfig.HistoryPersistenceMaxQPS.Get(col)(), "a given setting wins over a fixed one")
	require.Equal(t, 100000, dynamicconfig.MatchingPersistenceMaxQPS.Get(col)(), "the others stay fixed")
	require.True(t, dynamicconfig.EnableDeploymentVersions.Get(dynamicconfig.NewCollection(newDynamicConfig(nil), log.NewNoopLogger()))(DefaultNamespace),
		"Worker Deployment versions are on by default, as the workers need")
}

func TestDynamicConfig_RefreshesSearchAttributesOnlyWhileCatchingUp(t *testing.T) {
	dc := newDynamicConfig(nil)
	col := dynamicconfig.NewCollection(dc, log.NewNoopLogger())
	refresh := dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Get(col)
	require.False(t, refresh(), "a new database has its attributes before the services start")
	require.True(t, dynamicconfig.FrontendEnableUpdateWorkflowExecution.Get(col)(DefaultNamespace), "fixed settings are served")
	require.Equal(t, 100000, dynamicconfig.HistoryPersistenceMaxQPS.Get(col)())

	// The catch-up outlasts any pause a loaded machine puts between done
	// and the read that follows it.
	done := dc.catchUpSearchAttributes(time.Second)
	require.True(t, refresh())
	done()
	require.True(t, refresh(), "the caches get their time to refresh after the registration")
	require.Eventually(t, func() bool { return !refresh() }, 30*time.Second, 10*time.Millisecond)
}

func TestPickedPortTaken_OnlyABindOfAPortLeftToChance(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })
	_, bindErr := net.Listen("tcp", busy.Addr().String())
	require.Error(t, bindErr)
	taken := fatalError{msg: "Failed to start gRPC listener", tags: []tag.Tag{tag.Error(bindErr), tag.Address(busy.Addr().String())}}

	tests := []struct {
		name         string
		frontendPort int
		err          error
		want         bool
	}{
		{"a picked port taken", 0, taken, true},
		{"the same, reported with the Web UI's stop", 0, errors.Join(taken, errors.New("web UI stopped")), true},
		{"a frontend port the caller asked for", 7233, taken, false},
		{"another fatal error", 0, fatalError{msg: "Failed to start", tags: []tag.Tag{tag.Error(errors.New("boom"))}}, false},
		{"a requested port found busy before the start", 0, &PortError{Role: "ui", Port: 8233, Err: bindErr}, false},
		{"no error", 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, pickedPortTaken(Config{FrontendPort: tt.frontendPort}, tt.err))
		})
	}
}
