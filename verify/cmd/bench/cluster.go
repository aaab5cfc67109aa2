package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	apiclient "chargeonce/client"
	"chargeonce/dev/cluster"
	"chargeonce/fakeprovider"
	"chargeonce/internal/codec"
	"chargeonce/internal/temporalclient"
	"chargeonce/store"
	"chargeonce/verify/chaos"
	"chargeonce/verify/invariant"
	"chargeonce/workflows"
)

// clusterBench is a run on the local cluster (package cluster): checkouts
// through its two API instances, beside the bare one-activity workflow on
// its Temporal server, with two payment workers and then one.
type clusterBench struct {
	o        options
	progress *slog.Logger
	c        *cluster.Cluster
	http     *http.Client
	amount   string
	bare     []*bareRunner
	tc       client.Client
	rep      *Report
	// checkoutKeys and bareKeys are the workflow IDs of the current
	// measurement whose histories are read.
	checkoutKeys, bareKeys *keys
	next                   atomic.Uint64
	orders                 []int64
	// service is the service of each of the cluster's processes, by name.
	service map[string]string
}

func runCluster(ctx context.Context, o options, log, progress *slog.Logger) (*Report, error) {
	started := time.Now()
	dir, err := os.MkdirTemp("", "chargeonce-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ports, err := cluster.FreePorts()
	if err != nil {
		return nil, err
	}
	progress.Info("starting the cluster", "dir", dir)
	// The workers publish the embedded run's timing; the provider keeps
	// its keys well past it.
	env := chaos.Env(chaos.Config{Timing: benchTiming(), Retention: fakeprovider.DefaultRetention})
	c, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Ports: ports, Env: env, Logger: progress})
	if err != nil {
		return nil, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			progress.Warn("cluster did not stop cleanly", "error", err)
		}
	}()
	keyring, err := codec.ParseKeyring(c.CodecKeys())
	if err != nil {
		return nil, err
	}
	tc, err := temporalclient.Dial(ctx, c.TemporalClient(),
		temporalclient.Options{DataConverter: codec.NewDataConverter(keyring), Logger: log})
	if err != nil {
		return nil, err
	}
	defer tc.Close()

	b := &clusterBench{o: o, progress: progress, c: c, http: &http.Client{Timeout: opTimeout}, amount: "548.90", tc: tc,
		checkoutKeys: &keys{limit: historySamples}, bareKeys: &keys{limit: historySamples}, service: map[string]string{}}
	for _, part := range c.Parts() {
		for _, name := range part.ProcessNames() {
			b.service[name] = part.Service
		}
	}
	for range 2 {
		r, err := startBare(tc, (&bench{o: o}).workerOptions(), o.eager)
		if err != nil {
			return nil, err
		}
		b.bare = append(b.bare, r)
	}
	defer func() {
		for _, r := range b.bare {
			if r != nil {
				r.stop()
			}
		}
	}()
	cpuTime = b.cpuTime
	b.rep = &Report{
		Command:        "go run ./verify/cmd/bench " + strings.Join(os.Args[1:], " "),
		Started:        started.UTC().Format(time.RFC3339),
		GoVersion:      runtime.Version(),
		CPUs:           runtime.NumCPU(),
		Persistence:    "Temporal server " + serverVersion() + " as its own process on PostgreSQL " + cluster.PostgresVersion + " (local cluster)",
		InvariantsHeld: true,
		Setup: []string{
			"checkout = POST /api/orders/{id}/checkout to the cluster's two API processes in turn (orders created beforehand); paid = 200",
			"bare workflow = one workflow with one trivial activity, started with ExecuteWorkflow from this process and run by as many bare workers in this process as there are payment workers, on the same server",
			"CPU = user+system CPU of every cluster process (PostgreSQL with its backends, Temporal, Web UI, provider, workers, APIs) and of this process, over the phase",
			fmt.Sprintf("phases: %s each; %d CPUs shared by everything", o.phase, runtime.NumCPU()),
		},
	}
	systems := []system{{"checkout", true, b.prepareCheckout}, {"bare workflow", false, b.prepareBare}}
	// Warm connections and caches first.
	for _, s := range systems {
		run, err := s.prepare(ctx, 20, 0)
		if err != nil {
			return nil, err
		}
		if p := closedLoop(ctx, 4, 20, time.Minute, run); p.failed > 0 {
			return nil, fmt.Errorf("warm-up of %s: %d of 20 failed: %w", s.name, p.failed, p.firstErr)
		}
	}
	for _, workers := range []int{2, 1} {
		if workers == 1 {
			second := c.ProcessNames(cluster.ServiceWorker)[1]
			progress.Info("stopping one payment worker and one bare worker", "worker", second)
			if err := c.StopProcess(second); err != nil {
				return nil, err
			}
			b.bare[1].stop()
			b.bare[1] = nil
		}
		if err := b.measure(ctx, systems, workers); err != nil {
			return nil, err
		}
	}
	if err := b.check(ctx, tc); err != nil {
		return nil, err
	}
	b.rep.Wall = time.Since(started).Round(time.Second).String()
	return b.rep, nil
}

// measure runs the closed-loop phases at every concurrency, the open loop
// at loadedFraction of each one's best throughput, then the
// provider-latency phase, with the given number of workers, and reads the
// histories of the first paid checkouts and bare workflows.
func (b *clusterBench) measure(ctx context.Context, systems []system, workers int) error {
	label := fmt.Sprintf("%d worker", workers)
	if workers > 1 {
		label += "s"
	}
	b.checkoutKeys, b.bareKeys = &keys{limit: historySamples}, &keys{limit: historySamples}
	best := make([]float64, len(systems))
	for _, conc := range concurrencies {
		results := make([]phase, len(systems))
		parts := make([]map[string]float64, len(systems))
		for si, s := range systems {
			n := maxPool
			if s.ordered {
				n = poolSize(max(best[si], 50), conc, b.o.phase)
			}
			run, err := s.prepare(ctx, n, 0)
			if err != nil {
				return err
			}
			b.progress.Info("throughput", "system", s.name, "workers", workers, "concurrency", conc)
			var before map[string]time.Duration
			if conc == cpuConcurrency {
				before = b.cpuByPart()
			}
			results[si] = closedLoop(ctx, conc, n, b.o.phase, run)
			if before != nil {
				parts[si] = perOp(before, b.cpuByPart(), results[si].ok)
			}
			best[si] = max(best[si], results[si].throughput())
		}
		suffix := fmt.Sprintf(" c=%d, %s", conc, label)
		b.rep.add(Row{Section: "throughput", Metric: "checkouts/s" + suffix, Unit: "ops/s",
			Value: results[0].throughput(), Refs: refs(systems, results, phase.throughput), Note: failedNote(systems, results)})
		b.rep.add(Row{Section: "cost", Metric: "CPU per op" + suffix, Unit: "ms",
			Value: results[0].cpuPerOp(), Refs: refs(systems, results, phase.cpuPerOp), Note: "every cluster process and this one"})
		for _, q := range []float64{0.5, 0.99} {
			pct := func(p phase) float64 { return p.percentile(q) }
			b.rep.add(Row{Section: "latency", Metric: fmt.Sprintf("p%.0f", q*100) + suffix, Unit: "ms",
				Value: pct(results[0]), Refs: refs(systems, results, pct), Note: "closed loop"})
		}
		b.rep.closedLoopTargets(conc, results, ", "+label)
		if conc == cpuConcurrency {
			b.rep.add(partsRow(systems, parts, suffix))
		}
	}
	if _, _, err := historyRows(ctx, b.rep, b.tc, b.checkoutKeys.ids, b.bareKeys.ids, ", "+label); err != nil {
		return err
	}

	loaded := make([]phase, len(systems))
	for si, s := range systems {
		rate := loadedFraction * best[si]
		n := int(rate*b.o.phase.Seconds()) + 1
		run, err := s.prepare(ctx, n, 0)
		if err != nil {
			return err
		}
		b.progress.Info("latency", "system", s.name, "workers", workers, "rate", rate)
		loaded[si] = openLoop(ctx, rate, n, b.o.phase, run)
	}
	for _, q := range []float64{0.5, 0.99} {
		pct := func(p phase) float64 { return p.percentile(q) }
		b.rep.add(Row{Section: "latency", Metric: fmt.Sprintf("p%.0f @%.0f%% max, %s", q*100, loadedFraction*100, label), Unit: "ms",
			Value: pct(loaded[0]), Refs: refs(systems, loaded, pct),
			Note: fmt.Sprintf("open loop at each one's own rate: checkout %.0f/s, bare workflow %.0f/s%s", loadedFraction*best[0], loadedFraction*best[1], failedNote(systems, loaded))})
	}
	b.rep.loadedTarget(loaded, ", "+label)

	// The same arrival rate for both, with the provider (the bare
	// activity) taking 50ms, as in the embedded run.
	rate := 0.5 * best[0]
	if err := b.setProviderDelay(ctx, providerDelay); err != nil {
		return err
	}
	results := make([]phase, len(systems))
	for si, s := range systems {
		n := int(rate*b.o.phase.Seconds()) + 1
		run, err := s.prepare(ctx, n, providerDelay)
		if err != nil {
			return err
		}
		results[si] = openLoop(ctx, rate, n, b.o.phase, run)
	}
	if err := b.setProviderDelay(ctx, 0); err != nil {
		return err
	}
	b.rep.add(Row{Section: "latency", Metric: "p50 overhead over provider 50ms, " + label, Unit: "ms",
		Value: overhead(results[0]), Refs: refs(systems, results, overhead),
		Note: fmt.Sprintf("open loop at %.0f/s for both%s", rate, failedNote(systems, results))})
	b.rep.overheadTarget(results, ", "+label)
	return nil
}

// prepareCheckout creates n orders through the APIs and returns the
// operation that pays order i through one API or the other.
func (b *clusterBench) prepareCheckout(ctx context.Context, n int, _ time.Duration) (op, error) {
	ids := make([]int64, n)
	for i := range ids {
		o, err := b.api().CreateOrder(ctx, b.amount, "TRY", "bench order")
		if err != nil {
			return nil, fmt.Errorf("create order: %w", err)
		}
		ids[i] = o.ID
	}
	b.orders = append(b.orders, ids...)
	return func(ctx context.Context, i int) error {
		res, err := b.api().Checkout(ctx, ids[i], cardToken)
		if err == nil && res.HTTPStatus != http.StatusOK {
			err = fmt.Errorf("checkout of order %d answered %d, not paid at once", ids[i], res.HTTPStatus)
		}
		if err == nil {
			b.checkoutKeys.add(workflows.WorkflowID(res.IdempotencyKey))
		}
		return err
	}, nil
}

func (b *clusterBench) prepareBare(_ context.Context, _ int, delay time.Duration) (op, error) {
	return func(ctx context.Context, _ int) error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		id, err := b.bare[0].run(ctx, delay)
		if err == nil {
			b.bareKeys.add(id)
		}
		return err
	}, nil
}

// api is a client of the next API.
func (b *clusterBench) api() *apiclient.Client {
	apis := b.c.APIURLs()
	return apiclient.New(apis[int(b.next.Add(1))%len(apis)], b.c.APIKey(), apiclient.WithHTTPClient(b.http))
}

// send makes one request of the fake provider's admin API.
func (b *clusterBench) send(ctx context.Context, method, target, body string, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s answered %d: %s", method, target, resp.StatusCode, bytes.TrimSpace(data))
	}
	return nil
}

func (b *clusterBench) setProviderDelay(ctx context.Context, delay time.Duration) error {
	m := fakeprovider.Mode{Name: fakeprovider.ModeNormal}
	if delay > 0 {
		m = fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: delay}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return b.send(ctx, http.MethodPut, b.c.ProviderURL()+"/_admin/mode", string(body), http.StatusOK)
}

// check runs the invariant checker on every order of the run.
func (b *clusterBench) check(ctx context.Context, tc client.Client) error {
	st, err := store.Open(ctx, b.c.DatabaseURL())
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := invariant.Check(ctx, invariant.Config{
		Store:    st,
		Provider: invariant.OverHTTP{BaseURL: b.c.ProviderURL(), Client: b.http},
		Temporal: tc,
		Interval: benchTiming().Interval,
	}, b.orders)
	if err != nil {
		return err
	}
	b.rep.add(Row{Section: "invariants", Metric: "violations", Unit: "violations", Value: float64(len(rep.Violations)), Note: rep.String()})
	b.rep.InvariantsHeld = rep.OK()
	return nil
}

// cpuTime is the CPU time of every process of the cluster and of this one.
func (b *clusterBench) cpuTime() time.Duration {
	var sum time.Duration
	for _, d := range b.cpuByPart() {
		sum += d
	}
	return sum
}

// benchPart names this process among the parts of cpuByPart.
const benchPart = "benchmark"

// cpuByPart is the CPU time so far of each service of the cluster, its
// replicas summed, and of this process, under benchPart.
func (b *clusterBench) cpuByPart() map[string]time.Duration {
	leaders := map[int]string{os.Getpid(): benchPart}
	for _, p := range b.c.Processes() {
		if pid := p.Pid(); pid > 0 {
			leaders[pid] = b.service[p.Name]
		}
	}
	ticks := attribute(readProcs(), leaders)
	cpu := make(map[string]time.Duration, len(ticks))
	for part, n := range ticks {
		cpu[part] = time.Duration(n) * time.Second / clockTicks
	}
	return cpu
}

// procStat is what cpuByPart reads of one process.
type procStat struct {
	pid, ppid, pgrp int
	// ticks is its user and system CPU time, with that of its children
	// that have exited, in clockTicks.
	ticks int64
}

// readProcs reads every process of the machine from /proc; one that exits
// meanwhile is left out.
func readProcs() []procStat {
	entries, _ := os.ReadDir("/proc")
	procs := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses and may
		// hold spaces: state ppid pgrp … utime(14) stime(15) cutime cstime.
		fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		if len(fields) < 15 {
			continue
		}
		p := procStat{pid: pid}
		p.ppid, _ = strconv.Atoi(fields[1])
		p.pgrp, _ = strconv.Atoi(fields[2])
		for _, f := range fields[11:15] {
			n, _ := strconv.ParseInt(f, 10, 64)
			p.ticks += n
		}
		procs = append(procs, p)
	}
	return procs
}

// attribute sums the ticks of procs by part. A process belongs to the part
// that leaders names for it, for the leader of its process group, or for
// its nearest ancestor, in that order; the others belong to none. The
// ancestors matter for PostgreSQL, whose every backend makes itself the
// leader of a session of its own.
func attribute(procs []procStat, leaders map[int]string) map[string]int64 {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.pid] = p.ppid
	}
	partOf := func(p procStat) (string, bool) {
		if part, ok := leaders[p.pid]; ok {
			return part, true
		}
		if part, ok := leaders[p.pgrp]; ok {
			return part, true
		}
		seen := map[int]bool{p.pid: true}
		for pid := parent[p.pid]; pid > 1 && !seen[pid]; pid = parent[pid] {
			if part, ok := leaders[pid]; ok {
				return part, true
			}
			seen[pid] = true
		}
		return "", false
	}
	ticks := map[string]int64{}
	for _, p := range procs {
		if part, ok := partOf(p); ok {
			ticks[part] += p.ticks
		}
	}
	return ticks
}

// perOp is the CPU milliseconds per operation of each part between two
// readings of cpuByPart, over ok operations.
func perOp(before, after map[string]time.Duration, ok int) map[string]float64 {
	out := make(map[string]float64, len(after))
	if ok == 0 {
		return out
	}
	for part, d := range after {
		out[part] = ms(d-before[part]) / float64(ok)
	}
	return out
}

// partsRow tells where each system's CPU per operation went, by part of
// the cluster. Its figure leaves out the API processes, which only the
// checkout goes through: what is left compares the same parts.
func partsRow(systems []system, parts []map[string]float64, suffix string) Row {
	withoutAPI := func(p map[string]float64) float64 {
		var sum float64
		for part, v := range p {
			if part != cluster.ServiceAPI {
				sum += v
			}
		}
		return sum
	}
	var notes []string
	row := Row{Section: "cost", Metric: "CPU per op without the APIs" + suffix, Unit: "ms", Value: withoutAPI(parts[0])}
	for i, s := range systems {
		if i > 0 {
			row.Refs = append(row.Refs, Ref{Name: s.name, Value: withoutAPI(parts[i])})
		}
		var by []string
		for _, part := range slices.Sorted(maps.Keys(parts[i])) {
			by = append(by, fmt.Sprintf("%s %.1f", part, parts[i][part]))
		}
		notes = append(notes, s.name+": "+strings.Join(by, ", "))
	}
	row.Note = "ms per op by part; " + strings.Join(notes, "; ")
	return row
}

// serverVersion is the Temporal server module's version this binary was
// built with, which is go.mod's and the cluster's.
func serverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "go.temporal.io/server" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}

// clockTicks is the kernel's USER_HZ, in which /proc reports CPU time; it is
// 100 on every Linux architecture Go supports.
const clockTicks = 100
