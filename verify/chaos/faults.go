package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"chargeonce/fakeprovider"
)

// restartPause is how long a killed worker stays dead: long enough for its
// running activities to time out and go to the other worker.
const restartPause = time.Second

// fault is one planned fault, fired once the at-th checkout has started.
type fault struct {
	at   int
	kind string
	fire func(ctx context.Context) error
}

// plan spreads the faults over the checkouts, so that each one hits the
// system while customers are paying.
func (r *run) plan() []fault {
	n := r.cfg.Checkouts
	spread := func(j, of int, shift float64) int {
		at := int((float64(j+1)/float64(of+1) + shift) * float64(n))
		return min(max(at, 0), n-1)
	}
	var plan []fault
	for j := range r.cfg.ModeSwitches {
		m := r.modeFor(j)
		plan = append(plan, fault{at: spread(j, r.cfg.ModeSwitches, 0), kind: FaultMode,
			fire: func(ctx context.Context) error { return r.setMode(ctx, m) }})
	}
	for j := range r.cfg.WorkerKills {
		fire := func(ctx context.Context) error { return r.restartProcess(ctx, r.currentWorker(j)) }
		if r.processes == nil {
			w := r.workers[j%len(r.workers)]
			fire = func(ctx context.Context) error { return r.killWorker(ctx, w) }
		}
		plan = append(plan, fault{at: spread(j, r.cfg.WorkerKills, 0.03), kind: FaultWorkerKill, fire: fire})
	}
	for j := range r.cfg.APIKills {
		name := r.apiNames[j%len(r.apiNames)]
		plan = append(plan, fault{at: spread(j, r.cfg.APIKills, 0.05), kind: FaultAPIKill,
			fire: func(ctx context.Context) error { return r.restartProcess(ctx, name) }})
	}
	for j := range r.cfg.ServerRestarts {
		plan = append(plan, fault{at: spread(j, r.cfg.ServerRestarts, 0.07), kind: FaultServerRestart,
			fire: r.stack.RestartTemporal})
	}
	for j := range r.cfg.WebhookSwitches {
		c := r.webhookChaosFor(j)
		plan = append(plan, fault{at: spread(j, r.cfg.WebhookSwitches, 0.05), kind: FaultWebhookChaos,
			fire: func(ctx context.Context) error { return r.setWebhookChaos(ctx, c) }})
	}
	for j := range r.cfg.ForgedEvents {
		plan = append(plan, fault{at: spread(j, r.cfg.ForgedEvents, 0.02), kind: FaultForgedEvent,
			fire: func(ctx context.Context) error { return r.forgeEvent(ctx, j) }})
	}
	for j := range r.cfg.PostgresRestarts {
		plan = append(plan, fault{at: spread(j, r.cfg.PostgresRestarts, -0.1), kind: FaultPostgres,
			fire: r.restartPostgres})
	}
	plan = append(plan, r.deployFaults(spread)...)
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })
	return plan
}

// modeFor is the j-th provider mode of the run: each misbehaviour in turn,
// then normal service, over and over.
func (r *run) modeFor(j int) fakeprovider.Mode {
	seed := r.cfg.Seed + uint64(j)
	modes := []fakeprovider.Mode{
		// Twice the attempt timeout: the first request times out, the next
		// finds the key in flight, a later one gets the replay.
		{Name: fakeprovider.ModeSlow, Delay: 2 * r.cfg.Timing.AttemptTimeout},
		{Name: fakeprovider.ModeError, Rate: 0.2, Seed: seed},
		{Name: fakeprovider.ModeLostResponse, Rate: 0.3, Seed: seed},
		{Name: fakeprovider.ModeDrop},
		{Name: fakeprovider.ModeRateLimit, Rate: 0.3, Seed: seed},
		{Name: fakeprovider.ModeNormal},
	}
	return modes[j%len(modes)]
}

// injectFaults fires the plan as the checkouts progress.
func (r *run) injectFaults(ctx context.Context) error {
	for _, f := range r.plan() {
		for r.startedCount() < f.at+1 {
			select {
			case <-r.progress:
			case <-ctx.Done():
				return nil
			}
		}
		r.cfg.Logger.Info("injecting fault", "kind", f.kind, "after_checkouts", f.at+1)
		if err := f.fire(ctx); err != nil {
			return fmt.Errorf("chaos: %s: %w", f.kind, err)
		}
		r.count(r.faults, f.kind)
	}
	return nil
}

func (r *run) startedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// markStarted counts a started checkout and wakes the fault injector.
func (r *run) markStarted() {
	r.mu.Lock()
	r.started++
	r.mu.Unlock()
	select {
	case r.progress <- struct{}{}:
	default:
	}
}

// killWorker kills w with SIGKILL while charges run, keeps it down for a
// moment, and starts it again.
func (r *run) killWorker(ctx context.Context, w *workerProcess) error {
	if err := w.kill(); err != nil {
		return err
	}
	select {
	case <-time.After(restartPause):
	case <-ctx.Done():
		return nil
	}
	return w.start()
}

// setMode switches the provider's chaos mode through its admin API, as an
// operator of a separate provider process would.
func (r *run) setMode(ctx context.Context, m fakeprovider.Mode) error {
	if err := r.putAdmin(ctx, "/_admin/mode", m); err != nil {
		return fmt.Errorf("chaos: set provider mode %s: %w", m.Name, err)
	}
	return nil
}

// putAdmin PUTs v as JSON to the provider's admin API at path.
func (r *run) putAdmin(ctx context.Context, path string, v any) error {
	return r.admin(ctx, http.MethodPut, path, v, nil)
}
