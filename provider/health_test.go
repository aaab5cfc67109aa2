package provider

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A provider that refuses new attempts in a row is skipped, an attempt
// that ended for reasons of ours counts for nothing, and after the open
// timeout one probe decides: taken, the provider is asked again.
func TestHealth_SkipsAProviderThatKeepsRefusingUntilItsProbeIsTaken(t *testing.T) {
	h, err := NewHealth(BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: 50 * time.Millisecond}, nil)
	require.NoError(t, err)
	send := func(p string, v Verdict) {
		t.Helper()
		report, ok := h.Try(p)
		require.True(t, ok, "%s is asked", p)
		report(v)
	}
	send("alpha", Refused)
	send("alpha", Refused)
	send("alpha", Unheard)
	send("alpha", Refused)
	_, ok := h.Try("alpha")
	require.False(t, ok, "three refusals in a row open the breaker; the unheard attempt counts for nothing")
	require.Equal(t, "open", h.State("alpha"))
	send("beta", Refused)
	send("beta", Took)
	require.Equal(t, "closed", h.State("beta"), "each provider has its own breaker")

	require.Eventually(t, func() bool { return h.State("alpha") == "half-open" }, 5*time.Second, 10*time.Millisecond)
	probe, ok := h.Try("alpha")
	require.True(t, ok, "the probe")
	_, ok = h.Try("alpha")
	require.False(t, ok, "one probe at a time")
	probe(Took)
	require.Equal(t, "closed", h.State("alpha"))
	send("alpha", Took)
}

func TestNewHealth_RefusesABadConfig(t *testing.T) {
	_, err := NewHealth(BreakerConfig{FailureRatio: 2}, nil)
	require.ErrorContains(t, err, "FailureRatio 2 is not in [0, 1]")
}
