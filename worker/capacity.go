package worker

import (
	"context"
	"log/slog"
	"time"

	"chargeonce/internal/metrics"
	"chargeonce/workflows"
)

// capacityCheckEvery is how often the worker compares the lookups that the
// open attempts ask for with the rate the provider allows.
const capacityCheckEvery = time.Minute

// capacityWatch warns when the open attempts ask for more lookups than the
// provider allows (Timing.LookupDemand past the rate, that is more open
// attempts than Timing.LookupCapacity), once when the demand rises past the
// rate and once when it falls back, rather than at every check. Past the
// capacity the lookups queue up on their lookup task queue, which the
// backlog gauges show, and run late. The open attempts are counted across
// providers, so with several providers the worker compares them with the
// slowest provider's rate: the watch may warn before any provider is past
// its rate, never after.
type capacityWatch struct {
	stats   metrics.AttemptStats
	timing  workflows.Timing
	allowed float64
	log     *slog.Logger
	// over is whether the last check found the demand past the rate.
	over bool
}

func newCapacityWatch(stats metrics.AttemptStats, timing workflows.Timing, allowed float64, log *slog.Logger) *capacityWatch {
	return &capacityWatch{stats: stats, timing: timing, allowed: allowed, log: log}
}

// run checks at once, then every period until ctx ends.
func (c *capacityWatch) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check compares the demand of the attempts open now with the allowed rate,
// and logs when the comparison changed since the last check.
func (c *capacityWatch) check(ctx context.Context) {
	readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	open, _, err := c.stats.OpenAttemptStats(readCtx)
	if err != nil {
		if ctx.Err() == nil { // not merely stopping
			c.log.Warn("lookup capacity not checked: the open attempts could not be counted", "error", err)
		}
		return
	}
	demand := c.timing.LookupDemand(open)
	over := demand > c.allowed
	if over == c.over {
		return
	}
	c.over = over
	attrs := []any{"open_attempts", open, "lookups_per_second", demand,
		"allowed_per_second", c.allowed, "max_open_attempts", c.timing.LookupCapacity(c.allowed)}
	if over {
		c.log.Warn("the open attempts ask for more lookups than the provider allows: lookups wait on their task queue and run late, "+
			"and attempts may stay open past their abandon deadline", attrs...)
		return
	}
	c.log.Info("the lookups of the open attempts are within the provider's rate again", attrs...)
}
