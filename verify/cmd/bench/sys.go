package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"chargeonce/internal/cputime"
)

// cpuTime is the CPU time of this process so far (see package cputime),
// or zero when the kernel does not say, which leaves the cost rows at zero.
// The cluster run replaces it with the CPU time of every process of the
// cluster and this one.
var cpuTime = func() time.Duration {
	d, err := cputime.Process()
	if err != nil {
		return 0
	}
	return d
}

// memory is the process's memory at one moment.
type memory struct {
	// rss is VmRSS from /proc/self/status, in bytes.
	rss int64
	// heap is the Go heap in use after a collection, in bytes.
	heap       int64
	goroutines int
}

// measureMemory collects garbage, returns freed memory to the system, and
// reads the resident set and the live heap, so that two readings differ by
// what is live rather than by what the collector has not reclaimed yet.
func measureMemory() (memory, error) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := vmRSS()
	if err != nil {
		return memory{}, err
	}
	return memory{rss: rss, heap: int64(ms.HeapInuse), goroutines: runtime.NumGoroutine()}, nil
}

func vmRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read the resident set size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read the resident set size: %w", err)
	}
	return 0, fmt.Errorf("no VmRSS line in /proc/self/status")
}
