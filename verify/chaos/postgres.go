package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// postgresInstallDir holds one directory per installed PostgreSQL server
// version on Debian, which pg_ctlcluster needs.
const postgresInstallDir = "/usr/lib/postgresql"

// Bounds of a PostgreSQL outage as the run sees it.
const (
	// reconnectTimeout bounds the wait for the stack's store to answer
	// again after the server is back.
	reconnectTimeout = 30 * time.Second
	// outageGrace is how long after the store answers again a server error
	// still counts as the outage's: pooled connections that died with the
	// server fail one query each before the pool replaces them.
	outageGrace = 5 * time.Second
	// outageRetryPause is how long a customer waits before asking again
	// after a server error during an outage.
	outageRetryPause = 500 * time.Millisecond
)

func isPostgresURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// defaultRestartCommand restarts the "main" cluster of the newest PostgreSQL
// server installed, the way .ci/postgres.sh picks it.
func defaultRestartCommand() ([]string, error) {
	entries, err := os.ReadDir(postgresInstallDir)
	if err != nil {
		return nil, fmt.Errorf("chaos: find the PostgreSQL version to restart (set a restart command instead): %w", err)
	}
	var versions []float64
	names := map[float64]string{}
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64)
		if err != nil {
			continue // not a version directory
		}
		if _, err := os.Stat(filepath.Join(postgresInstallDir, e.Name(), "bin", "postgres")); err != nil {
			continue
		}
		versions = append(versions, v)
		names[v] = e.Name()
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("chaos: no PostgreSQL server under %s to restart; set a restart command", postgresInstallDir)
	}
	return []string{"pg_ctlcluster", names[slices.Max(versions)], "main", "restart"}, nil
}

// outage is a time the merchant database was down, from the start of its
// restart until its end plus outageGrace; end is zero while it lasts.
type outage struct{ begin, end time.Time }

// duringOutage reports whether a request sent at sent and answered at
// answered overlapped a database outage.
func (r *run) duringOutage(sent, answered time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.outages {
		if answered.Before(o.begin) {
			continue
		}
		if o.end.IsZero() || sent.Before(o.end) {
			return true
		}
	}
	return false
}

// restartPostgres restarts the PostgreSQL server under the run, then waits
// until the stack's store answers again: the pool must replace its dead
// connections by itself.
func (r *run) restartPostgres(ctx context.Context) error {
	r.mu.Lock()
	r.outages = append(r.outages, outage{begin: time.Now()})
	i := len(r.outages) - 1
	r.mu.Unlock()
	err := r.restartAndReconnect(ctx)
	r.mu.Lock()
	r.outages[i].end = time.Now().Add(outageGrace)
	r.mu.Unlock()
	return err
}

func (r *run) restartAndReconnect(ctx context.Context) error {
	if err := r.restartDatabase(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reconnectTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		_, _, err := r.stack.Store().OpenAttemptStats(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the store did not answer within %v of the restart: %w", reconnectTimeout, err)
		case <-tick.C:
		}
	}
}

// runRestartCommand restarts PostgreSQL with the configured command.
func (r *run) runRestartCommand(ctx context.Context) error {
	command := r.cfg.PostgresRestartCommand
	out, err := exec.CommandContext(ctx, command[0], command[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(command, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// throughOutage calls fn until it succeeds or fails outside a database
// outage, as a customer who was told nothing tries again later.
func (r *run) throughOutage(ctx context.Context, fn func() error) error {
	for {
		sent := time.Now()
		err := fn()
		if err == nil || !r.duringOutage(sent, time.Now()) {
			return err
		}
		select {
		case <-time.After(outageRetryPause):
		case <-ctx.Done():
			return err
		}
	}
}
