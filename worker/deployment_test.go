package worker_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/worker"
)

// A test binary carries no VCS revision, so its build ID is its hash: the
// same on every call, and one the check takes.
func TestDefaultBuildID_IsTheBinarysHashWithoutARevision(t *testing.T) {
	id, err := worker.DefaultBuildID()
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^sha-[0-9a-f]{12}$`), id)
	require.NoError(t, chargeonce.CheckBuildID(id))
	again, err := worker.DefaultBuildID()
	require.NoError(t, err)
	require.Equal(t, id, again)
}
