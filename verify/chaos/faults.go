package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"chargeonce/dev/stack"
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
			fire: func(ctx context.Context) error { return r.switchModes(ctx, m) }})
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

// providerModes is one mode switch: the first provider's mode and, in a
// run with a backup, the backup's. shows is what the switch waits to see
// before the run's next fault, so that a window the customers must meet
// cannot pass unmet by chance; empty waits for nothing.
type providerModes struct {
	first, backup fakeprovider.Mode
	shows         string
}

// What a mode switch waits to see (providerModes.shows).
const (
	// showsPaidAtBackup: a charge succeeded at the backup, which only a
	// checkout that failed over sends.
	showsPaidAtBackup = "a payment at the backup"
	// showsRefused: a checkout was answered 503, nothing charged.
	showsRefused = "a checkout refused, nothing charged"
)

// modeFor is the j-th mode switch of the run: each misbehaviour in turn,
// then normal service, over and over; with a backup, backupModes.
func (r *run) modeFor(j int) providerModes {
	seed := r.cfg.Seed + uint64(j)
	normal := fakeprovider.Mode{Name: fakeprovider.ModeNormal}
	// Twice the attempt timeout: the first request times out, the next
	// finds the key in flight, a later one gets the replay.
	slow := fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * r.cfg.Timing.AttemptTimeout}
	lost := fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 0.3, Seed: seed}
	drop := fakeprovider.Mode{Name: fakeprovider.ModeDrop}
	rateLimit := fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 0.3, Seed: seed}
	if r.cfg.Backup {
		outage := fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1, Seed: seed}
		modes := []providerModes{
			{first: outage, backup: normal, shows: showsPaidAtBackup},
			{first: lost, backup: normal},
			{first: slow, backup: normal},
			{first: outage, backup: outage, shows: showsRefused},
			{first: drop, backup: normal},
			{first: rateLimit, backup: normal},
			{first: normal, backup: normal},
		}
		return modes[j%len(modes)]
	}
	modes := []fakeprovider.Mode{slow, {Name: fakeprovider.ModeError, Rate: 0.2, Seed: seed}, lost, drop, rateLimit, normal}
	return providerModes{first: modes[j%len(modes)]}
}

// showTimeout bounds a mode switch's wait for what it shows: the
// customers who keep checking out meet the new modes within seconds.
const showTimeout = 30 * time.Second

// switchModes switches every provider of the run to its mode of m, and
// then waits, at most showTimeout, until the run has shown what m shows.
func (r *run) switchModes(ctx context.Context, m providerModes) error {
	modes := []fakeprovider.Mode{m.first, m.backup}
	for i, p := range r.providers() {
		if err := r.setMode(ctx, p, modes[i]); err != nil {
			return err
		}
	}
	if m.shows == "" {
		return nil
	}
	before, err := r.shown(ctx, m.shows)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, showTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// The summary's counts then say what the window missed.
			r.cfg.Logger.Warn("a mode switch did not show what it waits for", "shows", m.shows, "within", showTimeout)
			return nil
		case <-tick.C:
		}
		n, err := r.shown(ctx, m.shows)
		if err == nil && n > before {
			return nil
		}
	}
}

// shown counts what a mode switch waits to see so far.
func (r *run) shown(ctx context.Context, what string) (int, error) {
	if what == showsRefused {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.refused, nil
	}
	url, err := r.providerURL(stack.BackupName)
	if err != nil {
		return 0, err
	}
	var charges struct {
		Data []fakeprovider.Charge `json:"data"`
	}
	if err := r.admin(ctx, url, http.MethodGet, "/_admin/charges", nil, &charges); err != nil {
		return 0, err
	}
	paid := 0
	for _, c := range charges.Data {
		if c.Status == fakeprovider.ChargeSucceeded {
			paid++
		}
	}
	return paid, nil
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

// setMode switches the chaos mode of p through its admin API, as an
// operator of a separate provider process would.
func (r *run) setMode(ctx context.Context, p fakeAt, m fakeprovider.Mode) error {
	if err := r.admin(ctx, p.url, http.MethodPut, "/_admin/mode", m, nil); err != nil {
		return fmt.Errorf("chaos: set provider %s's mode %s: %w", p.name, m.Name, err)
	}
	return nil
}
