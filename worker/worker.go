// Package worker runs the payment worker: it polls the payment task queue,
// executes PaymentWorkflow and its activities, and runs the outbox sweep that
// starts the workflows whose start was lost.
//
// The same Start serves the worker binary (cmd/worker), where each part is
// its own process, and the one-process dev stack.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/checkout"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// DefaultSweepEvery is how often the outbox sweep looks for attempts whose
// workflow was never started.
const DefaultSweepEvery = 30 * time.Second

// Deps are the parts a worker runs with.
type Deps struct {
	// Client is connected to Temporal with the encrypting data converter.
	Client client.Client
	// Provider is the card provider's client.
	Provider *provider.Client
	// Store is the merchant database.
	Store store.Store
	// Checkout runs the outbox sweep; its timing is the one the swept
	// workflows start with.
	Checkout *checkout.Service
	// Timing is checked against the provider's published key retention.
	Timing workflows.Timing
	// SweepEvery is the outbox sweep's period; zero means DefaultSweepEvery.
	SweepEvery time.Duration
	// Registerer receives the activities' metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Options tune the Temporal worker; the zero value is the SDK's defaults.
	Options sdkworker.Options
	// Logger receives the story of every payment.
	Logger *slog.Logger
}

// Worker is a started worker. Stop it once.
type Worker struct {
	sdk        sdkworker.Worker
	stopSweep  context.CancelFunc
	sweepGroup sync.WaitGroup
}

// Start checks the timing against the provider, registers the workflow and
// the activities, and starts polling and sweeping.
func Start(ctx context.Context, d Deps) (*Worker, error) {
	if d.Client == nil || d.Provider == nil || d.Store == nil || d.Checkout == nil || d.Logger == nil {
		return nil, errors.New("worker: client, provider, store, checkout and logger are required")
	}
	if err := CheckRetention(ctx, d.Provider, d.Timing); err != nil {
		return nil, err
	}
	var metrics *activities.Metrics
	if d.Registerer != nil {
		metrics = activities.NewMetrics(d.Registerer)
	}
	acts := &activities.Activities{Provider: d.Provider, Store: d.Store, Logger: d.Logger, Metrics: metrics}

	w := sdkworker.New(d.Client, chargeonce.TaskQueue, d.Options)
	workflows.Register(w, acts)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("worker: start polling task queue %s: %w", chargeonce.TaskQueue, err)
	}

	every := d.SweepEvery
	if every == 0 {
		every = DefaultSweepEvery
	}
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	wk := &Worker{sdk: w, stopSweep: stop}
	wk.sweepGroup.Go(func() { d.Checkout.RunSweeper(sweepCtx, every) })
	return wk, nil
}

// Stop ends the sweep and stops polling; it waits for running activities
// up to the worker's stop timeout.
func (w *Worker) Stop() {
	w.stopSweep()
	w.sweepGroup.Wait()
	w.sdk.Stop()
}

// CheckRetention refuses a timing whose abandon deadline is not below the key
// retention that the provider publishes. After retention the provider forgets
// the key, and a late retry with it would charge the card a second time.
func CheckRetention(ctx context.Context, p *provider.Client, t workflows.Timing) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("worker: timing: %w", err)
	}
	retention, err := p.KeyRetention(ctx)
	if err != nil {
		return fmt.Errorf("worker: read the provider's key retention: %w", err)
	}
	if t.AbandonAfter >= retention {
		return fmt.Errorf("worker: abandon-after %v must be shorter than the provider's key retention %v: "+
			"a retry after the provider forgot the key would charge the card again", t.AbandonAfter, retention)
	}
	return nil
}
