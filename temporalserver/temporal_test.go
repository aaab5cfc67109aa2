package temporalserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

func TestDynamicConfig_RefreshesSearchAttributesOnlyWhileCatchingUp(t *testing.T) {
	dc := &dynamicConfig{}
	col := dynamicconfig.NewCollection(dc, log.NewNoopLogger())
	refresh := dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Get(col)
	require.False(t, refresh(), "a new database has its attributes before the services start")
	require.True(t, dynamicconfig.FrontendEnableUpdateWorkflowExecution.Get(col)(DefaultNamespace), "fixed settings are served")
	require.Equal(t, 100000, dynamicconfig.HistoryPersistenceMaxQPS.Get(col)())

	done := dc.catchUpSearchAttributes(50 * time.Millisecond)
	require.True(t, refresh())
	done()
	require.True(t, refresh(), "the caches get their time to refresh after the registration")
	require.Eventually(t, func() bool { return !refresh() }, 5*time.Second, 10*time.Millisecond)
}
