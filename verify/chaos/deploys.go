package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"chargeonce/internal/rollout"
)

// Fault kinds of the deploys, as counted in Summary.Faults.
const (
	// FaultDeploy: a new version's workers start beside the current
	// version's, and it becomes current.
	FaultDeploy = "deploy of a new version"
	// FaultDrain: the version before a deploy drains, and its workers stop.
	FaultDrain = "old version drained and stopped"
	// FaultRollback: the version before a bad deploy becomes current
	// again, the runs that reached the bad version move back to it, and the
	// bad version drains and stops.
	FaultRollback = "rollback of a bad version"
)

// Deploy is a new version of the workers, deployed blue-green while
// customers pay (Config.Deploys).
type Deploy struct {
	// BuildID names the version; WorkerBinary is its worker command.
	BuildID, WorkerBinary string
	// Bad is a version that must not keep the runs it takes: once some
	// reached it, the run rolls back to the version before and moves those
	// runs there with a pinned override (rollout.PinAll).
	Bad bool
}

// Deployed is what a deploy did, in Summary.Deploys.
type Deployed struct {
	// BuildID is the version deployed, Previous the version current
	// before it.
	BuildID, Previous string
	// Current is when BuildID became current; Drained, for a good deploy,
	// when Previous had drained and its workers stopped.
	Current, Drained time.Time
	// RolledBack, for a bad deploy, is when Previous was current again,
	// and Moved the workflow IDs of the runs moved back to it.
	RolledBack time.Time
	Moved      []string
}

// WorkerVersions starts the workers of another version beside an external
// stack's, such as cluster.Cluster.StartWorkerVersion.
type WorkerVersions interface {
	// StartWorkerVersion starts the workers of version buildID from
	// binary and returns their process names once they answer.
	StartWorkerVersion(ctx context.Context, buildID, binary string) ([]string, error)
}

// currentTimeout bounds the wait for the server to take a new version as
// current, which it refuses until the version polls every task queue that
// the current version polls.
const currentTimeout = time.Minute

// deployFaults are the faults of the deploys, each deploy and its drain or
// rollback in turn, spread over the checkouts.
func (r *run) deployFaults(spread func(j, of int, shift float64) int) []fault {
	n := len(r.cfg.Deploys)
	var plan []fault
	for j, d := range r.cfg.Deploys {
		plan = append(plan, fault{at: spread(2*j, 2*n, 0), kind: FaultDeploy,
			fire: func(ctx context.Context) error { return r.deploy(ctx, d) }})
		if d.Bad {
			plan = append(plan, fault{at: spread(2*j+1, 2*n, 0), kind: FaultRollback, fire: r.rollBack})
		} else {
			plan = append(plan, fault{at: spread(2*j+1, 2*n, 0), kind: FaultDrain, fire: r.drainPrevious})
		}
	}
	return plan
}

// rollout drives the deployment as an operator does with cmd/rollout,
// telling the run's log.
func (r *run) rollout() *rollout.Rollout {
	return rollout.New(r.stack.Client(), logWriter{r.cfg.Logger})
}

// deploy starts d's workers and makes d current.
func (r *run) deploy(ctx context.Context, d Deploy) error {
	names, err := r.versions.StartWorkerVersion(ctx, d.BuildID, d.WorkerBinary)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, currentTimeout)
	defer cancel()
	for {
		err := r.rollout().Current(ctx, d.BuildID)
		if err == nil {
			break
		}
		r.cfg.Logger.Info("new version not current yet", "build_id", d.BuildID, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("make version %s current: %w", d.BuildID, err)
		case <-time.After(time.Second):
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deployed = append(r.deployed, Deployed{BuildID: d.BuildID, Previous: r.version, Current: time.Now()})
	r.previousWorkers, r.workerNames = r.workerNames, names
	r.version = d.BuildID
	return nil
}

// lastDeploy is the deploy in progress.
func (r *run) lastDeploy() (Deployed, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deployed[len(r.deployed)-1], r.previousWorkers
}

// drainPrevious waits until the version before the last deploy drains, and
// stops its workers: every run pinned to it finished there.
func (r *run) drainPrevious(ctx context.Context) error {
	d, workers := r.lastDeploy()
	if err := r.rollout().Drain(ctx, d.Previous, r.cfg.SettleTimeout); err != nil {
		return err
	}
	if err := r.stopAll(workers); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deployed[len(r.deployed)-1].Drained = time.Now()
	return nil
}

// rollBack makes the version before the last deploy current again, moves
// every run pinned to the bad version back to it until the bad version
// drains, and stops the bad version's workers.
func (r *run) rollBack(ctx context.Context) error {
	d, previousWorkers := r.lastDeploy()
	ro := r.rollout()
	if err := ro.Current(ctx, d.Previous); err != nil {
		return err
	}
	rolledBack := time.Now()
	// Visibility lists a run a moment after it started, so runs that
	// started on the bad version just before the rollback are moved by a
	// later pass.
	ctx, cancel := context.WithTimeout(ctx, r.cfg.SettleTimeout)
	defer cancel()
	var moved []string
	for {
		ids, err := ro.PinAll(ctx, d.BuildID, d.Previous)
		moved = append(moved, ids...)
		if err != nil {
			return err
		}
		err = ro.Drain(ctx, d.BuildID, 0)
		if err == nil {
			break
		}
		if !errors.Is(err, rollout.ErrNotDrained) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("roll back version %s: %w", d.BuildID, err)
		case <-time.After(rollout.DrainPoll):
		}
	}
	r.mu.Lock()
	badWorkers := r.workerNames
	r.workerNames, r.version = previousWorkers, d.Previous
	r.deployed[len(r.deployed)-1].RolledBack, r.deployed[len(r.deployed)-1].Moved = rolledBack, moved
	r.mu.Unlock()
	return r.stopAll(badWorkers)
}

func (r *run) stopAll(names []string) error {
	var errs []error
	for _, name := range names {
		errs = append(errs, r.processes.StopProcess(name))
	}
	return errors.Join(errs...)
}

// currentWorker is the j-th worker process of the current version, which a
// worker kill hits.
func (r *run) currentWorker(j int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.workerNames[j%len(r.workerNames)]
}

// logWriter writes each line of the rollout's output to the run's log.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("rollout: " + strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
