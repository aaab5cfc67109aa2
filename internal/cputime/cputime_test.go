package cputime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/cputime"
)

func TestProcess_GrowsWithWork(t *testing.T) {
	before, err := cputime.Process()
	require.NoError(t, err)
	// Spin until the kernel has charged some CPU; rusage ticks are coarse.
	after := before
	for x := 0; after == before; x++ {
		after, err = cputime.Process()
		require.NoError(t, err)
	}
	require.Greater(t, after, before)
}
