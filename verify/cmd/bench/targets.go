package main

import (
	"fmt"
	"math"
	"time"

	"chargeonce/provider"
)

// The targets: each compares the checkout with the bare one-activity
// workflow in the same run, embedded or on the cluster, and this file owns
// their limits.
const (
	// minThroughputRatio: checkouts/s at c=8 and at c=64.
	minThroughputRatio = 1.0
	// maxCPURatio: CPU per paid checkout at cpuConcurrency.
	maxCPURatio = 1.0
	// cpuConcurrency is the concurrency of the CPU target; the cluster
	// run tells each part's CPU at it.
	cpuConcurrency = 8
	// maxEventsRatio: history events per paid checkout.
	maxEventsRatio = 1.0
	// maxOverheadRatio: p50 over a provider that takes providerDelay,
	// less that delay.
	maxOverheadRatio = 1.0
	// maxLoadedRatio: p50 in the open loop at loadedFraction of each
	// one's best throughput.
	maxLoadedRatio = 1.5
	// loadedFraction is the load of the loaded-latency target.
	loadedFraction = 0.9
)

// The failover targets (failover.go) compare checkouts on a stack whose
// first provider has a backup, in the same run: each at p50 and at p99
// (failoverQuantiles).
const (
	// maxSkipRatio: a checkout while the first provider's breaker is open
	// over one with both providers healthy. A skip must cost nothing.
	maxSkipRatio = 1.2
	// maxExtraRoundTrips: what a 503 of the first provider adds to a
	// checkout over one with both healthy, in round trips: a checkout with
	// both healthy at the same percentile is one, the attempt that asks a
	// provider and hears its answer through the payment workflow. The 503
	// costs one such attempt, refused, before the backup's pays; the limit
	// allows it the same 20% of noise as maxSkipRatio.
	maxExtraRoundTrips = 1.2
	// minOutagePaidShare: the share of checkouts paid while the first
	// provider answers every request 503.
	minOutagePaidShare = 0.99
)

// failoverQuantiles are the percentiles of the failover rows and targets.
var failoverQuantiles = []float64{0.5, 0.99}

// ratio is f of the checkout over f of the bare workflow: results holds
// them first and second.
func ratio(results []phase, f func(phase) float64) float64 {
	return f(results[0]) / f(results[1])
}

// closedLoopTargets adds the targets of a closed-loop phase at
// concurrency c: throughput at 8 and 64, CPU at cpuConcurrency. suffix
// ends each name.
func (r *Report) closedLoopTargets(c int, results []phase, suffix string) {
	if c == 8 || c == 64 {
		r.target(fmt.Sprintf("throughput c=%d: checkout / bare workflow%s", c, suffix), ratio(results, phase.throughput), minThroughputRatio, true)
	}
	if c == cpuConcurrency {
		r.target(fmt.Sprintf("CPU per op c=%d: checkout / bare workflow%s", c, suffix), ratio(results, phase.cpuPerOp), maxCPURatio, false)
	}
}

// loadedTarget adds the target of the open loop at loadedFraction.
func (r *Report) loadedTarget(results []phase, suffix string) {
	p50 := func(p phase) float64 { return p.percentile(0.5) }
	r.target(fmt.Sprintf("p50 @%.0f%% max: checkout / bare workflow%s", loadedFraction*100, suffix), ratio(results, p50), maxLoadedRatio, false)
}

// overheadTarget adds the target of the phase with the slow provider.
func (r *Report) overheadTarget(results []phase, suffix string) {
	r.target("p50 overhead over provider 50ms: checkout / bare workflow"+suffix, ratio(results, overhead), maxOverheadRatio, false)
}

// eventsTarget adds the target of the history lengths, whose ratio is
// measured.
func (r *Report) eventsTarget(measured float64, suffix string) {
	r.target("history events per paid checkout: checkout / bare workflow"+suffix, measured, maxEventsRatio, false)
}

// overhead is a phase's p50 less the provider's delay.
func overhead(p phase) float64 { return p.percentile(0.5) - ms(providerDelay) }

// failoverFigures are what the failover scenarios measured.
type failoverFigures struct {
	// healthy, unavailable and open are checkouts one at a time: with both
	// providers healthy, with the first answering 503, and with the first
	// provider's breaker open.
	healthy, unavailable, open phase
	// outage is checkouts at outageConcurrency while the first provider
	// answers every request 503.
	outage phase
	// probes counts the open phase's requests that reached the first
	// provider.
	probes int
}

// extraRoundTrips is what the first provider's 503 added to the checkout's
// q-quantile over both healthy, in checkouts with both healthy at that
// quantile (maxExtraRoundTrips).
func (f failoverFigures) extraRoundTrips(q float64) float64 {
	return (f.unavailable.percentile(q) - f.healthy.percentile(q)) / f.healthy.percentile(q)
}

// allowedProbes is how many requests an open breaker lets through over d:
// one each time it has been open for its timeout, the first of them
// possibly at once, since the phase may start just as a timeout ends.
func allowedProbes(d time.Duration) float64 {
	return math.Floor(d.Seconds()/provider.DefaultBreakerOpenTimeout.Seconds()) + 1
}

// failoverTargets adds the targets of the failover scenarios; the last
// says whether the open phase measured skips at all, that is whether the
// breaker really was open.
func (r *Report) failoverTargets(f failoverFigures) {
	for _, q := range failoverQuantiles {
		r.target(fmt.Sprintf("failover p%.0f: first provider's breaker open / both healthy", q*100),
			f.open.percentile(q)/f.healthy.percentile(q), maxSkipRatio, false)
	}
	for _, q := range failoverQuantiles {
		r.target(fmt.Sprintf("failover p%.0f: (first provider answers 503 - both healthy) / both healthy", q*100),
			f.extraRoundTrips(q), maxExtraRoundTrips, false)
	}
	r.target("failover: share of checkouts paid while the first provider is down", f.outage.paidShare(), minOutagePaidShare, true)
	r.target("failover: requests reaching the first provider with its breaker open / probes it lets through",
		float64(f.probes)/allowedProbes(f.open.elapsed), 1, false)
}
