// Command rollout drives the blue-green rollout of a new version of the
// workers: the versions of the Temporal Worker Deployment "chargeonce"
// (chargeonce.DeploymentName), each named by its workers' build ID.
//
//	rollout status                              the current and ramping versions, every version's pinned runs, and the runs with no version
//	rollout ramp --build-id V --percent P       send P% of new runs to V (0 < P < 100)
//	rollout current --build-id V                send every new run to V
//	rollout drain --build-id V [--wait D]       whether no open run is pinned to V any more
//	rollout pin --workflow-id ID --build-id V   move one run to V (the rescue from a bad version)
//	rollout pin --from B --build-id V           move every open run pinned to B to V
//	rollout unpin --workflow-id ID              take that override away again
//
// Every change is made under the deployment's conflict token, so that two
// operators, or an operator and a starting worker, never overwrite each
// other's change unseen. docs/operations.md ("Deploying a new version")
// gives the whole rollout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"

	"chargeonce"
	"chargeonce/internal/cli"
	"chargeonce/internal/logging"
	"chargeonce/internal/rollout"
	"chargeonce/internal/temporalclient"
)

func main() {
	cli.Run("rollout", run)
}

// usage is the help of the command as a whole; each subcommand's --help
// lists its flags.
const usage = `Usage: rollout <subcommand> [flags]

Subcommands, on the Temporal Worker Deployment "chargeonce":
  status      the current and ramping versions, for every version its drainage and its open pinned runs, and the open runs with no version
  ramp        send --percent of the new runs to the version --build-id (0 < percent < 100)
  current     make the version --build-id current: every new run starts on it
  drain       whether no open run is pinned to --build-id and it takes no new run; --wait polls until then
  pin         move the run --workflow-id, or every open run pinned to --from, to the version --build-id, whose code must replay their histories
  unpin       take the run --workflow-id's override away: it follows its own versioning again

Run "rollout <subcommand> --help" for its flags.
`

// dialTimeout bounds the connection to Temporal, so that a wrong address
// fails the command instead of hanging it.
const dialTimeout = 30 * time.Second

// subcommand is one of rollout's subcommands: flags defines its own flags
// on fs and returns what checks them once parsed, and what then runs
// against the deployment.
type subcommand func(fs *flag.FlagSet) (check func() error, act action)

// action is what a subcommand does against the deployment.
type action = func(ctx context.Context, r *rollout.Rollout) error

var subcommands = map[string]subcommand{
	"status":  statusCommand,
	"ramp":    rampCommand,
	"current": currentCommand,
	"drain":   drainCommand,
	"pin":     pinCommand,
	"unpin":   unpinCommand,
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.UsageError{Err: errors.New("name a subcommand: status, ramp, current, drain, pin or unpin")}
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	sub, ok := subcommands[args[0]]
	if !ok {
		return cli.UsageError{Err: fmt.Errorf("unknown subcommand %q: it is one of status, ramp, current, drain, pin or unpin", args[0])}
	}
	fs := flag.NewFlagSet("rollout "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	connFlags := temporalclient.RegisterFlags(fs)
	check, act := sub(fs)
	if err := cli.Parse(fs, args[1:], getenv); err != nil {
		return err
	}
	if err := check(); err != nil {
		return cli.UsageError{Err: err}
	}
	conn, err := connFlags.Resolve(getenv)
	if err != nil {
		return cli.UsageError{Err: err}
	}

	dialCtx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	// Nothing here sends a payload, so no codec is needed.
	sdkLogger := logging.AtLeast(slog.New(slog.NewTextHandler(stderr, nil)), slog.LevelError)
	c, err := temporalclient.Dial(dialCtx, conn, temporalclient.Options{DataConverter: converter.GetDefaultDataConverter(), Logger: sdkLogger})
	if err != nil {
		return err
	}
	defer c.Close()
	return act(ctx, rollout.New(c, stdout))
}

// buildIDFlag defines --build-id on fs, and returns it with its check: the
// build ID rule of the workers' own --build-id.
func buildIDFlag(fs *flag.FlagSet, usage string) (*string, func() error) {
	id := fs.String("build-id", "", usage)
	return id, func() error {
		if *id == "" {
			return errors.New("--build-id is required: the build ID of the version, as its workers' --build-id gave it")
		}
		if err := chargeonce.CheckBuildID(*id); err != nil {
			return fmt.Errorf("--build-id: %w", err)
		}
		return nil
	}
}

// workflowIDFlag defines --workflow-id on fs, and returns it with its check.
func workflowIDFlag(fs *flag.FlagSet) (*string, func() error) {
	id := fs.String("workflow-id", "", "`ID` of the workflow whose open run moves (a payment's or a refund's is its idempotency key)")
	return id, func() error {
		if strings.TrimSpace(*id) == "" {
			return errors.New("--workflow-id is required: the ID of the workflow whose run moves")
		}
		return nil
	}
}

func statusCommand(*flag.FlagSet) (func() error, action) {
	return func() error { return nil }, func(ctx context.Context, r *rollout.Rollout) error { return r.Status(ctx) }
}

func rampCommand(fs *flag.FlagSet) (func() error, action) {
	id, checkID := buildIDFlag(fs, "build `ID` of the version to ramp; its workers must be polling")
	percent := fs.Float64("percent", 0, "`percentage` of the new runs that start on the version, above 0 and below 100 (100 is: make it current)")
	check := func() error {
		if !(*percent > 0 && *percent < 100) {
			return errors.Join(checkID(), fmt.Errorf("--percent %v must be above 0 and below 100: make the version current to send it every new run", *percent))
		}
		return checkID()
	}
	return check, func(ctx context.Context, r *rollout.Rollout) error { return r.Ramp(ctx, *id, float32(*percent)) }
}

func currentCommand(fs *flag.FlagSet) (func() error, action) {
	id, check := buildIDFlag(fs, "build `ID` of the version to make current; its workers must be polling")
	return check, func(ctx context.Context, r *rollout.Rollout) error { return r.Current(ctx, *id) }
}

func drainCommand(fs *flag.FlagSet) (func() error, action) {
	id, checkID := buildIDFlag(fs, "build `ID` of the version whose workers are to stop")
	wait := fs.Duration("wait", 0, "how long to wait for the version to drain, looking again every 2s; 0 looks once")
	check := func() error {
		if *wait < 0 {
			return errors.Join(checkID(), fmt.Errorf("--wait %v must not be negative", *wait))
		}
		return checkID()
	}
	return check, func(ctx context.Context, r *rollout.Rollout) error { return r.Drain(ctx, *id, *wait) }
}

func pinCommand(fs *flag.FlagSet) (func() error, action) {
	wf := fs.String("workflow-id", "", "`ID` of the workflow whose open run moves (a payment's or a refund's is its idempotency key)")
	from := fs.String("from", "", "build `ID` of a version every open run of which moves, instead of one --workflow-id")
	id, checkID := buildIDFlag(fs, "build `ID` of the version the runs move to; its code must replay their histories")
	check := func() error {
		var which error
		switch {
		case strings.TrimSpace(*wf) == "" && *from == "":
			which = errors.New("--workflow-id or --from is required: the run that moves, or the version whose open runs all move")
		case *wf != "" && *from != "":
			which = errors.New("give --workflow-id or --from, not both")
		case *from != "":
			if err := chargeonce.CheckBuildID(*from); err != nil {
				which = fmt.Errorf("--from: %w", err)
			}
		}
		return errors.Join(which, checkID())
	}
	return check, func(ctx context.Context, r *rollout.Rollout) error {
		if *from != "" {
			_, err := r.PinAll(ctx, *from, *id)
			return err
		}
		return r.Pin(ctx, *wf, *id)
	}
}

func unpinCommand(fs *flag.FlagSet) (func() error, action) {
	wf, check := workflowIDFlag(fs)
	return check, func(ctx context.Context, r *rollout.Rollout) error { return r.Unpin(ctx, *wf) }
}
