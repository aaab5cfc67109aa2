package chargeonce_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestLookupTaskQueueOf_KeepsTheSharedQueueForTheUnnamedAndTheDefaultProvider(t *testing.T) {
	tests := []struct {
		provider, queue string
	}{
		{"", "chargeonce-lookups"},
		{chargeonce.DefaultProvider, "chargeonce-lookups"},
		{"eu", "chargeonce-lookups-eu"},
		{"stripe_us-2", "chargeonce-lookups-stripe_us-2"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			require.Equal(t, tt.queue, chargeonce.LookupTaskQueueOf(tt.provider))
		})
	}
}

func TestCheckBuildID_TakesWhatReadsTheSameEverywhere(t *testing.T) {
	for _, ok := range []string{"v2", "1f3a9c0b7d2e", "1f3a9c0b7d2e-dirty-0a1b2c3d4e5f", "2026.12.06+build.7", "dev", strings.Repeat("a", 255)} {
		require.NoError(t, chargeonce.CheckBuildID(ok), ok)
	}
	for _, bad := range []string{"", strings.Repeat("a", 256), "v2 beta", "-v2", ".v2", "v2/amd64", "v2\n", "sürüm"} {
		require.ErrorContains(t, chargeonce.CheckBuildID(bad), "must be 1 to 255 letters, digits", bad)
	}
}

// The count of a version's pinned runs asks visibility what the server
// asks for a version's drainage: open runs whose deployment version is the
// version, pinned.
func TestPinnedRunsQuery_NamesTheDeploymentVersionOfOpenPinnedRuns(t *testing.T) {
	require.Equal(t,
		"TemporalWorkerDeploymentVersion = 'chargeonce:v2' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
		chargeonce.PinnedRunsQuery("v2"))
}
