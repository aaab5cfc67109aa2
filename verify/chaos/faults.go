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
// run with a backup, the backup's, and what the switch waits to see before
// the run's next fault.
type providerModes struct {
	first, backup fakeprovider.Mode
	shows         show
}

// A show is what a mode switch waits to see, so that a window that the
// customers, or a later part of the run, must meet cannot pass unmet by
// chance: the switch waits until count has grown by need, or showTimeout
// has passed. A zero show waits for nothing.
type show struct {
	what  string
	count func(context.Context) (int, error)
	need  int
}

// showTimeout bounds a mode switch's wait for what it shows. The customers
// who keep checking out meet a new mode within seconds; an attempt the
// provider dropped is abandoned at its deadline, and the breaker that the
// drops open lets a request through again after 10 s.
const showTimeout = time.Minute

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
	if !r.cfg.Backup {
		modes := []fakeprovider.Mode{slow, {Name: fakeprovider.ModeError, Rate: 0.2, Seed: seed}, lost, drop, rateLimit, normal}
		return providerModes{first: modes[j%len(modes)]}
	}
	modes := r.backupModes(slow, lost, drop, rateLimit, normal, fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1, Seed: seed})
	m := modes[j%len(modes)]
	if j >= len(modes) {
		// The first round has shown what each window shows.
		m.shows = show{}
	}
	return m
}

// backupModes are the mode switches of a run with a backup, in turn. The
// first provider drops requests first, while its breakers are still
// closed: five failures in a row open a worker's breaker for 10 s, and
// an open breaker moves the payments to the backup instead. Then it
// answers slowly, loses responses, goes through an outage while the backup
// pays, and recovers; then both are down, when checkouts are refused with
// nothing charged, and the first provider limits the rate.
func (r *run) backupModes(slow, lost, drop, rateLimit, normal, outage fakeprovider.Mode) []providerModes {
	return []providerModes{
		// Two such customers give the late charges an order of each
		// order of arrival: one left unpaid, and one paid again first.
		{first: drop, backup: normal, shows: show{what: "unpaid attempts that the first provider dropped", count: r.droppedUnpaid, need: min(2, r.cfg.LateCharges)}},
		{first: slow, backup: normal},
		{first: lost, backup: normal},
		{first: outage, backup: normal, shows: show{what: "a payment at the backup", count: r.paidAtBackup, need: 1}},
		{first: normal, backup: normal},
		{first: outage, backup: outage, shows: show{what: "a checkout refused, nothing charged", count: r.refusedCount, need: 1}},
		{first: rateLimit, backup: normal},
	}
}

// switchModes switches every provider of the run to its mode of m, and
// then waits until the run has shown what m shows.
func (r *run) switchModes(ctx context.Context, m providerModes) error {
	modes := []fakeprovider.Mode{m.first, m.backup}
	for i, p := range r.providers() {
		if err := r.setMode(ctx, p, modes[i]); err != nil {
			return err
		}
	}
	if m.shows.need <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, showTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	// A count that fails, as during a database restart, is read again.
	before := -1
	for {
		n, err := m.shows.count(ctx)
		switch {
		case err != nil:
		case before < 0:
			before = n
		case n-before >= m.shows.need:
			r.cfg.Logger.Info("the mode switch showed what it waits for", "shows", m.shows.what, "count", n-before)
			return nil
		}
		select {
		case <-ctx.Done():
			// The summary's counts then say what the window missed.
			r.cfg.Logger.Warn("a mode switch did not show what it waits for", "shows", m.shows.what, "within", showTimeout)
			return nil
		case <-tick.C:
		}
	}
}

// refusedCount counts the checkouts refused so far, nothing charged.
func (r *run) refusedCount(context.Context) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused, nil
}

// droppedUnpaid counts the attempts of which the first provider dropped a
// charge request and charged nothing so far, with an automatic capture
// and a card that is not declined. Each is abandoned at its deadline, as
// the outage that follows the drops charges nothing either, and its
// customer pays no other way, so the run can plant a late charge for it
// (plantLateCharges).
func (r *run) droppedUnpaid(ctx context.Context) (int, error) {
	state, err := r.providerSource(r.providers()[0]).ProviderState(ctx)
	if err != nil {
		return 0, err
	}
	charged := map[string]bool{}
	for _, c := range state.Charges {
		charged[c.IdempotencyKey] = true
	}
	// A request answered nothing whose key charged nothing was dropped.
	dropped := map[string]bool{}
	for _, rec := range state.Requests {
		if rec.IsCharge() && rec.Key != "" && rec.Status == 0 && !charged[rec.Key] {
			dropped[rec.Key] = true
		}
	}
	n := 0
	for key := range dropped {
		a, err := r.stack.Store().GetAttempt(ctx, key)
		if err != nil {
			return 0, err
		}
		r.mu.Lock()
		card := r.cards[a.OrderID]
		r.mu.Unlock()
		if !a.Capture.Manual() && !isDeclineCard(card) {
			n++
		}
	}
	return n, nil
}

// paidAtBackup counts the backup's charges that took money, which only a
// checkout that failed over sends.
func (r *run) paidAtBackup(ctx context.Context) (int, error) {
	backup, err := r.provider(stack.BackupName)
	if err != nil {
		return 0, err
	}
	state, err := r.providerSource(backup).ProviderState(ctx)
	if err != nil {
		return 0, err
	}
	paid := 0
	for _, c := range state.Charges {
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
