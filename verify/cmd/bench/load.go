package main

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// op runs operation number i of a phase. It returns nil only when the
// operation did what the phase measures (a paid checkout, a completed
// workflow); an error counts as a failure and leaves its latency out.
type op func(ctx context.Context, i int) error

// phase is what one load phase observed.
type phase struct {
	ok, failed int
	// inWindow counts the successful operations that completed within
	// elapsed, the phase's measured window.
	inWindow int
	elapsed  time.Duration
	// latencies of the successful operations; for an open loop, counted
	// from the moment each operation was due, so that a stalled system
	// cannot hide its queueing delay.
	latencies []time.Duration
	// cpu is the process's user+system CPU time over the phase.
	cpu time.Duration
	// firstErr is the first failure, for the log.
	firstErr error
}

func (p phase) throughput() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.inWindow) / p.elapsed.Seconds()
}

// cpuPerOp is CPU milliseconds per successful operation.
func (p phase) cpuPerOp() float64 {
	if p.ok == 0 {
		return 0
	}
	return float64(p.cpu) / float64(time.Millisecond) / float64(p.ok)
}

// percentile returns the q-quantile (0 < q <= 1) of the latencies in
// milliseconds, by the nearest-rank method, or NaN when there are none.
func (p phase) percentile(q float64) float64 {
	return percentileMillis(p.latencies, q)
}

func percentileMillis(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	rank = max(0, min(rank, len(s)-1))
	return float64(s[rank]) / float64(time.Millisecond)
}

// recorder collects the outcomes of concurrent operations.
type recorder struct {
	// deadline ends the measured window: an operation still running then
	// is waited for and its latency counts, but not towards throughput, so
	// that one straggler cannot stretch a whole phase. Zero means none.
	deadline  time.Time
	mu        sync.Mutex
	ok        int
	inWindow  int
	failed    int
	latencies []time.Duration
	firstErr  error
	last      time.Time
}

func (r *recorder) record(latency time.Duration, err error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.After(r.last) {
		r.last = now
	}
	if err != nil {
		r.failed++
		if r.firstErr == nil {
			r.firstErr = err
		}
		return
	}
	r.ok++
	if r.deadline.IsZero() || !now.After(r.deadline) {
		r.inWindow++
	}
	r.latencies = append(r.latencies, latency)
}

// phase sums up the operations recorded since start. The measured window
// ends at the last completion, or at the deadline if that comes first.
func (r *recorder) phase(start time.Time, cpu time.Duration) phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.last
	if end.IsZero() {
		end = time.Now()
	}
	if !r.deadline.IsZero() && end.After(r.deadline) {
		end = r.deadline
	}
	return phase{ok: r.ok, failed: r.failed, inWindow: r.inWindow, elapsed: end.Sub(start),
		latencies: r.latencies, cpu: cpu, firstErr: r.firstErr}
}

// closedLoop runs conc workers, each starting its next operation when the
// previous one ends, until d has passed or n operations have started.
// Throughput counts the operations completed within d.
func closedLoop(ctx context.Context, conc, n int, d time.Duration, run op) phase {
	var next atomic.Int64
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	rec := recorder{deadline: deadline}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				err := run(ctx, i)
				rec.record(time.Since(t), err)
			}
		})
	}
	wg.Wait()
	return rec.phase(start, cpuTime()-cpu0)
}

// openLoop starts operations at a fixed rate per second for d, whether or
// not earlier ones have finished, and waits for all of them. At most n
// operations start.
func openLoop(ctx context.Context, rate float64, n int, d time.Duration, run op) phase {
	var rec recorder
	interval := time.Duration(float64(time.Second) / rate)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	launched := 0
	for ctx.Err() == nil && launched < n {
		now := time.Now()
		if now.Sub(start) >= d {
			break
		}
		// Every operation that is due by now starts, so that a late wake-up
		// never lowers the rate.
		due := min(int(now.Sub(start)/interval)+1, n)
		for ; launched < due; launched++ {
			i := launched
			at := start.Add(time.Duration(i) * interval)
			wg.Go(func() {
				err := run(ctx, i)
				rec.record(time.Since(at), err)
			})
		}
		time.Sleep(max(time.Millisecond, min(interval, time.Until(start.Add(time.Duration(launched)*interval)))))
	}
	wg.Wait()
	return rec.phase(start, cpuTime()-cpu0)
}

// alternate runs ops in turn, one operation at a time: operation i of
// each op, then operation i+1 of each, until d has passed or n rounds have
// run. It returns one phase per op, in the order of ops. The ops thus meet
// the machine at the same moments, so that their figures compare even
// while its load changes, and an op can leave state that the next one
// needs, as a success that resets a breaker's count of failures. A phase's
// CPU is not told apart and stays zero.
func alternate(ctx context.Context, n int, d time.Duration, ops ...op) []phase {
	start := time.Now()
	deadline := start.Add(d)
	recs := make([]recorder, len(ops))
	for k := range recs {
		recs[k].deadline = deadline
	}
	for i := 0; i < n && ctx.Err() == nil && time.Now().Before(deadline); i++ {
		for k, run := range ops {
			t := time.Now()
			err := run(ctx, i)
			recs[k].record(time.Since(t), err)
		}
	}
	out := make([]phase, len(ops))
	for k := range recs {
		out[k] = recs[k].phase(start, 0)
	}
	return out
}

// paidShare is the share of a phase's operations that succeeded, failures
// included: each operation of a phase that pays orders is one checkout.
func (p phase) paidShare() float64 {
	if p.ok+p.failed == 0 {
		return math.NaN()
	}
	return float64(p.ok) / float64(p.ok+p.failed)
}
