package worker_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/worker"
)

func TestCheckBuildID_TakesWhatReadsTheSameEverywhere(t *testing.T) {
	for _, ok := range []string{"v2", "1f3a9c0b7d2e", "1f3a9c0b7d2e-dirty-0a1b2c3d4e5f", "2026.12.06+build.7", "dev", strings.Repeat("a", 255)} {
		require.NoError(t, worker.CheckBuildID(ok), ok)
	}
	for _, bad := range []string{"", strings.Repeat("a", 256), "v2 beta", "-v2", ".v2", "v2/amd64", "v2\n", "sürüm"} {
		require.ErrorContains(t, worker.CheckBuildID(bad), "must be 1 to 255 letters, digits", bad)
	}
}

// A test binary carries no VCS revision, so its build ID is its hash: the
// same on every call, and one the check takes.
func TestDefaultBuildID_IsTheBinarysHashWithoutARevision(t *testing.T) {
	id, err := worker.DefaultBuildID()
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^sha-[0-9a-f]{12}$`), id)
	require.NoError(t, worker.CheckBuildID(id))
	again, err := worker.DefaultBuildID()
	require.NoError(t, err)
	require.Equal(t, id, again)
}
