// Command bench measures the whole chargeonce stack in one process and sets
// every figure beside a reference measured in the same run on the same
// embedded Temporal server: a bare one-activity workflow, and a direct loop
// that makes the same provider calls and database writes without Temporal.
//
// It prints one table and writes the same figures as JSON. Everything runs
// on loopback. See README.md for what each row means.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"chargeonce/internal/envflag"
)

// options are the command-line settings of one run.
type options struct {
	quick      bool
	out        string
	cpuProfile string
	// unknown is how many attempts wait in reconciliation in the
	// unknown-outcome scenario; zero means the mode's default.
	unknown int
	// phase is how long each throughput and latency phase runs; zero means
	// the mode's default.
	phase time.Duration
	// eager starts the bare workflow with Eager Workflow Start.
	eager bool
	// pollers and maxConcurrent tune both workers alike; zero keeps the
	// SDK's defaults.
	pollers       int
	maxConcurrent int
	// memoryTemporal runs the embedded Temporal server on an in-memory
	// SQLite database instead of a file.
	memoryTemporal bool
	logLevel       string
	// cluster runs on the local cluster (package cluster) instead of the
	// embedded stack.
	cluster bool
	// events, when positive, runs only the events mode with that many
	// checkouts.
	events int
}

// Defaults of a full run and of a --quick run.
const (
	fullPhase     = 8 * time.Second
	quickPhase    = 3 * time.Second
	fullUnknown   = 1000
	quickUnknown  = 200
	maxUnknown    = 20000
	defaultOut    = "bench-results.json"
	defaultLogLvl = "error"
)

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envflag.SetUsage(fs, "")
	fs.BoolVar(&o.quick, "quick", false, "short phases and 200 unknown outcomes (about 1-2 minutes)")
	fs.StringVar(&o.out, "out", defaultOut, "where to write the results as JSON")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.IntVar(&o.unknown, "unknown", 0, fmt.Sprintf("attempts left waiting in reconciliation (default %d, %d with --quick; at most %d)", fullUnknown, quickUnknown, maxUnknown))
	fs.DurationVar(&o.phase, "phase", 0, fmt.Sprintf("length of each throughput and latency phase (default %s, %s with --quick)", fullPhase, quickPhase))
	fs.BoolVar(&o.eager, "eager", false, "start the bare workflow with Eager Workflow Start (Update-With-Start of the checkout cannot be eager)")
	fs.IntVar(&o.pollers, "pollers", 0, "workflow and activity task pollers of each worker (0: SDK default)")
	fs.IntVar(&o.maxConcurrent, "max-concurrent", 0, "concurrent workflow and activity task executions of each worker (0: SDK default)")
	fs.BoolVar(&o.memoryTemporal, "memory-temporal", false, "run the embedded Temporal server on in-memory SQLite instead of a file")
	fs.StringVar(&o.logLevel, "log-level", defaultLogLvl, "level of the stack's logs on stderr: debug, info, warn or error")
	fs.BoolVar(&o.cluster, "cluster", false, "measure the local cluster instead (go run ./dev/cmd/cluster): checkouts through its two API processes beside the bare workflow on its Temporal server, with two workers and with one")
	fs.IntVar(&o.events, "events", 0, fmt.Sprintf("run only the events mode: this many checkouts (at most %d) against a provider slower than the charge budget, with provider events and with lookups only", maxEvents))
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q: bench takes only flags", fs.Args())
	}
	return o.withDefaults()
}

// withDefaults fills the mode's defaults and rejects what a run cannot honour.
func (o options) withDefaults() (options, error) {
	if o.phase == 0 {
		o.phase = fullPhase
		if o.quick {
			o.phase = quickPhase
		}
	}
	if o.unknown == 0 {
		o.unknown = fullUnknown
		if o.quick {
			o.unknown = quickUnknown
		}
	}
	switch {
	case o.phase < time.Second || o.phase > 5*time.Minute:
		return o, fmt.Errorf("--phase %s must be between 1s and 5m", o.phase)
	case o.unknown < 1 || o.unknown > maxUnknown:
		return o, fmt.Errorf("--unknown %d must be between 1 and %d", o.unknown, maxUnknown)
	case o.pollers < 0 || o.pollers > 64:
		return o, fmt.Errorf("--pollers %d must be between 0 (SDK default) and 64", o.pollers)
	case o.maxConcurrent < 0 || o.maxConcurrent > 10000:
		return o, fmt.Errorf("--max-concurrent %d must be between 0 (SDK default) and 10000", o.maxConcurrent)
	case o.events < 0 || o.events > maxEvents:
		return o, fmt.Errorf("--events %d must be between 0 (the full run) and %d", o.events, maxEvents)
	case o.cluster && o.events > 0:
		return o, errors.New("--events runs on the embedded stack only; leave out --cluster")
	case o.out == "":
		return o, errors.New("--out must name a file")
	}
	return o, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "bench: --log-level %q: want debug, info, warn or error\n", o.logLevel)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	progress := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench: --cpuprofile:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "bench: --cpuprofile:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}

	runner := runBench
	switch {
	case o.cluster:
		runner = runCluster
	case o.events > 0:
		runner = runEvents
	}
	rep, err := runner(ctx, o, log, progress)
	if err != nil {
		progress.Error("benchmark failed", "error", err)
		return 1
	}
	if err := rep.writeTable(stdout); err != nil {
		progress.Error("print the table", "error", err)
		return 1
	}
	if err := rep.writeJSON(o.out); err != nil {
		progress.Error("write the results", "error", err)
		return 1
	}
	progress.Info("results written", "file", o.out, "wall", rep.Wall)
	if !rep.InvariantsHeld {
		progress.Error("an invariant was broken; see the invariant rows")
		return 1
	}
	return 0
}
