package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// WorkerPackage is the import path of the worker command the run kills.
const WorkerPackage = "chargeonce/cmd/worker"

// BuildWorker builds the worker command into dir and returns the binary's
// path. It runs `go build`, so it must be called from inside the module.
func BuildWorker(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "chargeonce-worker")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, WorkerPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("chaos: go build %s: %w: %s", WorkerPackage, err, out)
	}
	return bin, nil
}

// workerProcess is one worker process that can be killed and started again
// with the same arguments.
type workerProcess struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// start starts the process. Its output is appended to its log file, so a
// restart continues the same log.
func (w *workerProcess) start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil {
		return fmt.Errorf("chaos: %s is already running", w.name)
	}
	f, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("chaos: %s log: %w", w.name, err)
	}
	cmd := exec.Command(w.bin, w.args...)
	// Only PATH: a CHARGEONCE_* variable of the caller must not change the
	// worker's configuration behind the run's back.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("chaos: start %s: %w", w.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	w.cmd, w.done, w.log = cmd, done, f
	return nil
}

// kill ends the process with SIGKILL, the way a crashed host ends it: no
// activity is finished and no poll is answered.
func (w *workerProcess) kill() error {
	return w.end(syscall.SIGKILL, 0)
}

// stop asks the process to shut down gracefully and kills it if it has not
// within grace.
func (w *workerProcess) stop(grace time.Duration) error {
	return w.end(syscall.SIGTERM, grace)
}

func (w *workerProcess) end(sig syscall.Signal, grace time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return nil
	}
	var errs []error
	if err := w.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, fmt.Errorf("chaos: signal %s: %w", w.name, err))
	}
	if sig != syscall.SIGKILL {
		select {
		case <-w.done:
		case <-time.After(grace):
			if err := w.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("chaos: kill %s: %w", w.name, err))
			}
		}
	}
	<-w.done
	errs = append(errs, w.log.Close())
	w.cmd, w.done, w.log = nil, nil, nil
	return errors.Join(errs...)
}
