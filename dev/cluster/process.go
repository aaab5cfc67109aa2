package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"chargeonce/internal/temporalclient"
)

// Process is one OS process of the cluster. It can be killed and started
// again, on the same data, while the rest of the cluster runs.
type Process struct {
	// Name is the service, with the replica's number when it has several:
	// worker-1, api-2, temporal.
	Name string
	// Log is the file the process writes its output to, appended to at
	// every start.
	Log string

	bin  string
	args []string
	env  []string
	dir  string
	// stopSignal asks the process to stop cleanly.
	stopSignal syscall.Signal
	// cred runs the process as another user (PostgreSQL refuses root).
	cred *syscall.Credential
	// ready answers nil once the started process serves; nil for a job.
	ready func(context.Context) error

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func newProcess(name, bin string, args []string, env map[string]string, log string) *Process {
	vars := make([]string, 0, len(env))
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	sort.Strings(vars)
	return &Process{Name: name, Log: log, bin: bin, args: args, env: vars, stopSignal: syscall.SIGTERM}
}

// awaitReady waits, up to startTimeout, until the process answers its
// readiness probe, or fails if it exits first.
func (p *Process) awaitReady(ctx context.Context) error {
	if p.ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return temporalclient.WaitFor(ctx, p.Name+" (log: "+p.Log+")", func(ctx context.Context) error {
		if !p.Running() {
			return fmt.Errorf("%s exited: %v", p.Name, p.Wait(0))
		}
		return p.ready(ctx)
	})
}

// Start starts the process, which must not be running.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("cluster: %s is running already", p.Name)
		}
	}
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: log of %s: %w", p.Name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = p.env, p.dir, log, log
	// Its own process group, so that a Ctrl-C in the terminal reaches the
	// cluster alone, which then stops the parts in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("cluster: start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		_ = log.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid is the process's id, or 0 when it is not running. The process leads
// its own process group, which holds its children too (PostgreSQL's
// backends).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	select {
	case <-p.done:
		return 0
	default:
		return p.cmd.Process.Pid
	}
}

// Running reports whether the process is running.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits until the process exits, or the timeout passes, and returns
// how it exited.
func (p *Process) Wait(timeout time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
	case <-time.After(timeout):
		return fmt.Errorf("cluster: %s still runs after %v (log: %s)", p.Name, timeout, p.Log)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("cluster: %s: %w (log: %s)", p.Name, p.err, p.Log)
	}
	return nil
}

// Kill kills the process with SIGKILL, as a crash does, and waits for it.
func (p *Process) Kill() error {
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := p.Wait(time.Minute)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // killed, as asked
	}
	return err
}

// Stop asks the process to stop, and kills it if it has not within
// timeout. A process that was not running is stopped already.
func (p *Process) Stop(timeout time.Duration) error {
	if !p.Running() {
		return nil
	}
	if err := p.signal(p.stopSignal); err != nil {
		return err
	}
	err := p.Wait(timeout)
	if !p.Running() {
		// Some servers (the Web UI) just die of the signal: they were asked to.
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == p.stopSignal {
				return nil
			}
		}
		return err
	}
	_ = p.Kill()
	return fmt.Errorf("cluster: %s did not stop within %v and was killed (log: %s)", p.Name, timeout, p.Log)
}

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("cluster: %s was never started", p.Name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("cluster: signal %s: %w", p.Name, err)
	}
	return nil
}
