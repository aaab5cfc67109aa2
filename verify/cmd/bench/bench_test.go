package main

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/helptext"
)

func TestPercentileMillis_NearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50.0, percentileMillis(d, 0.5))
	require.Equal(t, 95.0, percentileMillis(d, 0.95))
	require.Equal(t, 99.0, percentileMillis(d, 0.99))
	require.Equal(t, 100.0, percentileMillis(d, 1))
	require.Equal(t, time.Duration(100)*time.Millisecond, d[0], "the input is left unsorted")
	require.True(t, math.IsNaN(percentileMillis(nil, 0.5)))
}

func TestClosedLoop_StopsAtTheOperationCount(t *testing.T) {
	p := closedLoop(context.Background(), 4, 10, time.Minute, func(context.Context, int) error { return nil })
	require.Equal(t, 10, p.ok)
	require.Equal(t, 10, p.inWindow, "the window ends at the last completion")
	require.Zero(t, p.failed)
	require.Len(t, p.latencies, 10)
}

func TestClosedLoop_AStragglerDoesNotStretchTheWindow(t *testing.T) {
	const d = 200 * time.Millisecond
	p := closedLoop(context.Background(), 2, 1000, d, func(_ context.Context, i int) error {
		if i == 0 {
			time.Sleep(5 * d)
		} else {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	require.Equal(t, d, p.elapsed, "the window ends at the deadline, not at the straggler's completion")
	// The straggler, and at most the one operation the other worker had in
	// flight at the deadline, complete outside the window.
	require.GreaterOrEqual(t, p.inWindow, p.ok-2)
	require.Less(t, p.inWindow, p.ok, "the straggler is awaited but not counted")
	require.Positive(t, p.inWindow)
	require.InDelta(t, float64(p.inWindow)/d.Seconds(), p.throughput(), 1e-9)
	require.GreaterOrEqual(t, slices.Max(p.latencies), 5*d, "its latency still counts")
}

func TestClosedLoop_CountsFailuresApart(t *testing.T) {
	p := closedLoop(context.Background(), 2, 6, time.Minute, func(_ context.Context, i int) error {
		if i%3 == 0 {
			return errNotPaid
		}
		return nil
	})
	require.Equal(t, 4, p.ok)
	require.Equal(t, 2, p.failed)
	require.ErrorIs(t, p.firstErr, errNotPaid)
	require.Len(t, p.latencies, 4, "failures have no latency")
}

func TestOpenLoop_StartsOperationsWithoutWaitingForEarlierOnes(t *testing.T) {
	// Each operation blocks until all of them have started: a closed loop
	// with fewer workers would never finish, an open loop does.
	const n = 5
	started := make(chan struct{}, n)
	release := make(chan struct{})
	go func() {
		for range n {
			<-started
		}
		close(release)
	}()
	p := openLoop(context.Background(), 1000, n, time.Minute, func(context.Context, int) error {
		started <- struct{}{}
		<-release
		return nil
	})
	require.Equal(t, n, p.ok)
}

func TestParseOptions_Defaults(t *testing.T) {
	o, err := parseOptions(nil, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, fullPhase, o.phase)
	require.Equal(t, fullUnknown, o.unknown)
	require.Equal(t, defaultOut, o.out)

	o, err = parseOptions([]string{"--quick"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, quickPhase, o.phase)
	require.Equal(t, quickUnknown, o.unknown)
}

func TestParseOptions_HelpWritesFlagsWithTwoDashes(t *testing.T) {
	var help bytes.Buffer
	_, err := parseOptions([]string{"--help"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, help.String(), "  --quick\n")
	require.Empty(t, helptext.Faults(help.String()))
}

func TestParseOptions_RefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--phase", "10ms"}, "--phase 10ms must be between 1s and 5m"},
		{[]string{"--unknown", "-1"}, "--unknown -1 must be between 1 and 20000"},
		{[]string{"--unknown", "20001"}, "--unknown 20001 must be between 1 and 20000"},
		{[]string{"--pollers", "65"}, "--pollers 65 must be between 0 (SDK default) and 64"},
		{[]string{"--max-concurrent", "-2"}, "--max-concurrent -2 must be between 0 (SDK default) and 10000"},
		{[]string{"--out", ""}, "--out must name a file"},
		{[]string{"--events", "-1"}, "--events -1 must be between 0 (the full run) and 1000"},
		{[]string{"--events", "1001"}, "--events 1001 must be between 0 (the full run) and 1000"},
		{[]string{"extra"}, `unexpected arguments ["extra"]: bench takes only flags`},
	} {
		_, err := parseOptions(tc.args, &bytes.Buffer{})
		require.EqualError(t, err, tc.want, "args %q", tc.args)
	}
}

func TestReport_TargetDirection(t *testing.T) {
	var r Report
	r.target("above", 0.9, 0.8, true)
	r.target("below", 1.6, 1.5, false)
	r.target("not a number", math.NaN(), 2, false)
	require.True(t, r.Targets[0].Met)
	require.False(t, r.Targets[1].Met)
	require.False(t, r.Targets[2].Met)
}

func TestReport_AddAfterPutsTheRowBesideItsReference(t *testing.T) {
	var r Report
	for _, m := range []string{"a", checkoutEventsMetric, "c"} {
		r.add(Row{Metric: m})
	}
	r.addAfter(checkoutEventsMetric, Row{Metric: "events per succeeded refund", Unit: "events", Value: 9, Refs: []Ref{{Name: "paid checkout", Value: 6}}})
	r.addAfter("no such row", Row{Metric: "last"})
	var metrics []string
	for _, row := range r.Rows {
		metrics = append(metrics, row.Metric)
	}
	require.Equal(t, []string{"a", checkoutEventsMetric, "events per succeeded refund", "c", "last"}, metrics)
	require.Equal(t, 1.5, r.Rows[2].Refs[0].Ratio, "the ratio is computed as by add")

	var out bytes.Buffer
	require.NoError(t, r.writeTable(&out))
	require.Regexp(t, `(?m)^\s*`+checkoutEventsMetric+`\s.*\n\s*events per succeeded refund\s+9\.00\s+events\s+paid checkout 6\.00 \(1\.50x\)`, out.String())
}

// The refund's and the capture's rows stand after the checkout's, in the
// order they were measured, in every section.
func TestReport_RowsAddedAfterOneMetricKeepTheirOrder(t *testing.T) {
	var r Report
	for _, m := range []string{checkoutEventsMetric, serialCPUMetric, lastLatencyMetric, "last"} {
		r.add(Row{Metric: m})
	}
	for _, name := range []string{"refund", "capture"} {
		r.addAfter(lastLatencyMetric, Row{Metric: "p50 " + name + " c=1"})
		r.addAfter(serialCPUMetric, Row{Metric: "CPU per " + name + " c=1"})
	}
	r.addAfter(checkoutEventsMetric, Row{Metric: "events per succeeded refund"})
	r.addAfter(checkoutEventsMetric, Row{Metric: "events per captured hold"})
	var metrics []string
	for _, row := range r.Rows {
		metrics = append(metrics, row.Metric)
	}
	require.Equal(t, []string{
		checkoutEventsMetric, "events per succeeded refund", "events per captured hold",
		serialCPUMetric, "CPU per refund c=1", "CPU per capture c=1",
		lastLatencyMetric, "p50 refund c=1", "p50 capture c=1",
		"last",
	}, metrics)
}

func TestGate_HoldsUntilReleased(t *testing.T) {
	var g gate
	g.hold()
	held := g.after(time.Hour)
	select {
	case <-held:
		t.Fatal("a held delay ended before the release")
	default:
	}
	g.release()
	<-held // closed by the release, not by the hour
	require.NotNil(t, g.after(time.Nanosecond), "an open gate waits the delay")
}

func TestPeakPerSecond_CountsTheBusiestSecondAnywhere(t *testing.T) {
	at := func(ms ...int) []time.Time {
		var out []time.Time
		base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for _, m := range ms {
			out = append(out, base.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	require.Zero(t, peakPerSecond(nil))
	require.Equal(t, 1, peakPerSecond(at(0, 1000, 2000)), "a second is half-open: 0 and 1000 ms are apart")
	// The busiest window, 900-1899 ms, straddles two calendar seconds.
	require.Equal(t, 4, peakPerSecond(at(1500, 100, 900, 1100, 1899, 3000)))
}

// A process that leaves its leader's process group, as each PostgreSQL
// backend does with a session of its own, still counts for its leader's
// part; a process outside every part counts for none.
func TestAttribute_CountsAProcessThatLeftItsGroupForItsAncestor(t *testing.T) {
	leader := exec.Command("sh", "-c", "setsid timeout 20 sh -c 'while :; do :; done' & wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, leader.Start())
	var spinner procStat
	t.Cleanup(func() {
		if spinner.pid > 0 {
			_ = syscall.Kill(-spinner.pgrp, syscall.SIGKILL)
		}
		_ = syscall.Kill(-leader.Process.Pid, syscall.SIGKILL)
		_ = leader.Wait()
	})
	// The spinner is the leader's grandchild, through setsid, once it has
	// run for a clock tick.
	require.Eventually(t, func() bool {
		spinner = procStat{}
		procs := readProcs()
		parent := map[int]int{}
		for _, p := range procs {
			parent[p.pid] = p.ppid
		}
		for _, p := range procs {
			if parent[parent[p.pid]] == leader.Process.Pid && p.pgrp != leader.Process.Pid && p.ticks > 0 {
				spinner = p
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)

	unrelated := procStat{pid: 1 << 22, ppid: 1, pgrp: 1 << 22, ticks: 1 << 40}
	ticks := attribute(append(readProcs(), unrelated), map[int]string{leader.Process.Pid: "db"})
	require.GreaterOrEqual(t, ticks["db"], spinner.ticks)
	require.Less(t, ticks["db"], unrelated.ticks)
	require.Len(t, ticks, 1)
}
