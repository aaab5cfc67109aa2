package worker

import (
	"context"

	"chargeonce/provider"
	"chargeonce/workflows"
)

// LookupQueue is a lookup task queue that a worker polls, for the tests of
// package worker_test.
type LookupQueue struct {
	Name      string
	Providers []string
	PerSecond float64
}

// LookupQueues reads the limits of every provider, as Start does, and
// returns the lookup task queues that Start polls.
func LookupQueues(ctx context.Context, providers provider.Registry, t workflows.Timing) ([]LookupQueue, error) {
	each, err := checkEveryProvider(ctx, providers, t)
	if err != nil {
		return nil, err
	}
	var queues []LookupQueue
	for _, q := range lookupQueues(providers, each) {
		queues = append(queues, LookupQueue{Name: q.name, Providers: q.providers, PerSecond: q.perSecond})
	}
	return queues, nil
}
