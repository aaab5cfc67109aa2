package main

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/dev/stack"
	"chargeonce/store"
	"chargeonce/workflows"
)

func TestAlternate_RunsOneOperationOfEachOpInTurn(t *testing.T) {
	var ran []string
	record := func(name string, fail bool) op {
		return func(_ context.Context, i int) error {
			ran = append(ran, name+string(rune('0'+i)))
			if fail {
				return errNotPaid
			}
			return nil
		}
	}
	phases := alternate(context.Background(), 3, time.Minute, record("a", false), record("b", true))
	require.Equal(t, []string{"a0", "b0", "a1", "b1", "a2", "b2"}, ran)
	require.Len(t, phases, 2)
	require.Equal(t, 3, phases[0].ok)
	require.Zero(t, phases[0].failed)
	require.Len(t, phases[0].latencies, 3)
	require.Zero(t, phases[1].ok, "each op's outcomes are its own")
	require.Equal(t, 3, phases[1].failed)
	require.ErrorIs(t, phases[1].firstErr, errNotPaid)
}

func TestAlternate_EndsAfterItsTimeWithWholeRounds(t *testing.T) {
	const d = 50 * time.Millisecond
	slow := func(context.Context, int) error { time.Sleep(d / 5); return nil }
	phases := alternate(context.Background(), 1000, d, slow, slow)
	require.Equal(t, phases[0].ok, phases[1].ok, "a round that starts runs every op")
	require.Less(t, phases[0].ok, 1000)
	require.Positive(t, phases[0].ok)
}

func TestPhase_PaidShareCountsFailures(t *testing.T) {
	require.Equal(t, 0.99, phase{ok: 99, failed: 1}.paidShare())
	require.Equal(t, 1.0, phase{ok: 5}.paidShare())
	require.True(t, math.IsNaN(phase{}.paidShare()), "no checkout is no share")
}

func TestAllowedProbes_OnePerOpenTimeoutAndOneAtOnce(t *testing.T) {
	require.Equal(t, 1.0, allowedProbes(3*time.Second))
	require.Equal(t, 1.0, allowedProbes(9900*time.Millisecond))
	require.Equal(t, 2.0, allowedProbes(10*time.Second))
	require.Equal(t, 3.0, allowedProbes(25*time.Second))
}

// millis is a phase whose latencies are these milliseconds.
func millis(ms ...int) phase {
	p := phase{ok: len(ms), elapsed: 8 * time.Second}
	for _, m := range ms {
		p.latencies = append(p.latencies, time.Duration(m)*time.Millisecond)
	}
	return p
}

func TestReport_FailoverTargets(t *testing.T) {
	var r Report
	r.failoverTargets(failoverFigures{
		healthy:     millis(10, 20, 20, 40),
		open:        millis(11, 25, 25, 44),
		unavailable: millis(12, 21, 21, 48),
		outage:      phase{ok: 98, failed: 2},
		probes:      2,
	})
	got := map[string]Target{}
	for _, tg := range r.Targets {
		got[tg.Name] = tg
	}
	require.Len(t, got, 6)
	skip50 := got["failover p50: first provider's breaker open / both healthy"]
	require.InDelta(t, 1.25, skip50.Measured, 1e-9)
	require.Equal(t, maxSkipRatio, skip50.Limit)
	require.False(t, skip50.Met, "1.25× the healthy p50 is more than a skip may cost")
	require.True(t, got["failover p99: first provider's breaker open / both healthy"].Met, "44 / 40 ms")

	// p50: 21 - 20 ms against a 20 ms round trip; p99: 48 - 40 ms against 40 ms.
	trips50 := got["failover p50: (first provider answers 503 - both healthy) / both healthy"]
	require.InDelta(t, 0.05, trips50.Measured, 1e-9)
	require.True(t, trips50.Met)
	trips99 := got["failover p99: (first provider answers 503 - both healthy) / both healthy"]
	require.InDelta(t, 0.2, trips99.Measured, 1e-9)
	require.True(t, trips99.Met)
	require.InDelta(t, 2.3, failoverFigures{healthy: millis(10), unavailable: millis(33)}.extraRoundTrips(0.5), 1e-9,
		"a 503 that cost more than one round trip")

	paid := got["failover: share of checkouts paid while the first provider is down"]
	require.InDelta(t, 0.98, paid.Measured, 1e-9)
	require.True(t, paid.Above)
	require.False(t, paid.Met)

	probes := got["failover: requests reaching the first provider with its breaker open / probes it lets through"]
	require.Equal(t, 2.0, probes.Measured, "two requests where 8 s of an open breaker let one through")
	require.False(t, probes.Met)
}

func TestFirstProvider_CountsWhatReachedTheFirstProvider(t *testing.T) {
	var f firstProvider
	backup := store.Attempt{Provider: stack.BackupName, Requests: []chargeonce.ProviderRequest{{Duration: time.Hour}}}
	f.add([]store.Attempt{
		{Key: "refused", Provider: chargeonce.DefaultProvider, Requests: []chargeonce.ProviderRequest{{StatusCode: 503, Duration: time.Millisecond}}},
		backup,
	})
	f.add([]store.Attempt{{Key: "held", Provider: chargeonce.DefaultProvider}, backup})
	f.add([]store.Attempt{backup})
	require.Equal(t, 1, f.sent)
	require.Equal(t, 1, f.heldBack, "an attempt whose log lists nothing was held back")
	require.Equal(t, 1, f.skipped, "an order with no attempt at the first provider skipped it")
	require.Equal(t, []string{workflows.WorkflowID("refused"), workflows.WorkflowID("held")}, f.workflows)

	for range historySamples {
		f.add([]store.Attempt{{Key: "more", Provider: chargeonce.DefaultProvider}})
	}
	require.Len(t, f.workflows, historySamples, "a sample of the workflows")
}
