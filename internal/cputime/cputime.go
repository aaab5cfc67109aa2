// Package cputime reads how much CPU this process has used, which is how the
// benchmarks charge an operation with everything the one-process stack did
// for it: Temporal server, workers, fake provider and client together.
package cputime

import (
	"syscall"
	"time"
)

// Process returns the user plus system CPU time of this process so far, or
// an error when the kernel does not say.
func Process() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
