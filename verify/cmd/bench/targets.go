package main

import "fmt"

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
