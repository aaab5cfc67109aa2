// Command rollout drives the blue-green rollout of a new version of the
// workers: the versions of the Temporal Worker Deployment "chargeonce"
// (chargeonce.DeploymentName), each named by its workers' build ID.
//
//	rollout status                              the current and ramping versions, and every version's pinned runs
//	rollout ramp --build-id V --percent P       send P% of new runs to V (0 < P < 100)
//	rollout current --build-id V                send every new run to V
//	rollout drain --build-id V [--wait D]       whether no open run is pinned to V any more
//	rollout pin --workflow-id ID --build-id V   move one run to V (the rescue from a bad version)
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
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/internal/cli"
	"chargeonce/internal/logging"
	"chargeonce/internal/temporalclient"
)

func main() {
	cli.Run("rollout", run)
}

// usage is the help of the command as a whole; each subcommand's --help
// lists its flags.
const usage = `Usage: rollout <subcommand> [flags]

Subcommands, on the Temporal Worker Deployment "chargeonce":
  status      the current and ramping versions, and for every version its drainage and its open pinned runs
  ramp        send --percent of the new runs to the version --build-id (0 < percent < 100)
  current     make the version --build-id current: every new run starts on it
  drain       whether no open run is pinned to --build-id and it takes no new run; --wait polls until then
  pin         move the run --workflow-id to the version --build-id, whose code must replay its history
  unpin       take the run --workflow-id's override away: it follows its own versioning again

Run "rollout <subcommand> --help" for its flags.
`

// dialTimeout bounds the connection to Temporal, so that a wrong address
// fails the command instead of hanging it.
const dialTimeout = 30 * time.Second

// drainPoll is the pause between two looks at a draining version.
const drainPoll = 2 * time.Second

// subcommand is one of rollout's subcommands: flags defines its own flags
// on fs and returns what checks them once parsed, and what then runs
// against the deployment.
type subcommand func(fs *flag.FlagSet) (check func() error, act action)

// action is what a subcommand does against the deployment.
type action = func(ctx context.Context, r *rollout) error

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
	return act(ctx, &rollout{c: c, deployment: c.WorkerDeploymentClient().GetHandle(chargeonce.DeploymentName), out: stdout})
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
	return func() error { return nil }, func(ctx context.Context, r *rollout) error { return r.status(ctx) }
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
	return check, func(ctx context.Context, r *rollout) error { return r.ramp(ctx, *id, float32(*percent)) }
}

func currentCommand(fs *flag.FlagSet) (func() error, action) {
	id, check := buildIDFlag(fs, "build `ID` of the version to make current; its workers must be polling")
	return check, func(ctx context.Context, r *rollout) error { return r.current(ctx, *id) }
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
	return check, func(ctx context.Context, r *rollout) error { return r.drain(ctx, *id, *wait) }
}

func pinCommand(fs *flag.FlagSet) (func() error, action) {
	wf, checkWF := workflowIDFlag(fs)
	id, checkID := buildIDFlag(fs, "build `ID` of the version the run moves to; its code must replay the run's history")
	check := func() error { return errors.Join(checkWF(), checkID()) }
	return check, func(ctx context.Context, r *rollout) error { return r.pin(ctx, *wf, *id) }
}

func unpinCommand(fs *flag.FlagSet) (func() error, action) {
	wf, check := workflowIDFlag(fs)
	return check, func(ctx context.Context, r *rollout) error { return r.unpin(ctx, *wf) }
}

// rollout is a connection to the deployment.
type rollout struct {
	c          client.Client
	deployment client.WorkerDeploymentHandle
	out        io.Writer
}

// pinnedRuns counts the open runs pinned to buildID, through visibility,
// which lags the runs by up to a second or so.
func (r *rollout) pinnedRuns(ctx context.Context, buildID string) (int64, error) {
	res, err := r.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: chargeonce.PinnedRunsQuery(buildID)})
	if err != nil {
		return 0, fmt.Errorf("count the open runs pinned to version %s: %w", buildID, err)
	}
	return res.GetCount(), nil
}

func (r *rollout) describe(ctx context.Context) (client.WorkerDeploymentDescribeResponse, error) {
	desc, err := r.deployment.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return desc, fmt.Errorf("the Worker Deployment %s does not exist yet: it appears once a worker has polled as one of its versions (%w)", chargeonce.DeploymentName, err)
		}
		return desc, fmt.Errorf("read Worker Deployment %s: %w", chargeonce.DeploymentName, err)
	}
	return desc, nil
}

// versionName is a version's build ID, or "none".
func versionName(v *sdkworker.WorkerDeploymentVersion) string {
	if v == nil {
		return "none"
	}
	return v.BuildID
}

// isVersion reports whether v is the version buildID.
func isVersion(v *sdkworker.WorkerDeploymentVersion, buildID string) bool {
	return v != nil && v.BuildID == buildID
}

// drainage says a version's drainage status as the server last saw it.
func drainage(s client.WorkerDeploymentVersionDrainageStatus) string {
	switch s {
	case client.WorkerDeploymentVersionDrainageStatusDraining:
		return "draining"
	case client.WorkerDeploymentVersionDrainageStatusDrained:
		return "drained"
	}
	return "-"
}

func (r *rollout) status(ctx context.Context) error {
	desc, err := r.describe(ctx)
	if err != nil {
		return err
	}
	routing := desc.Info.RoutingConfig
	fmt.Fprintf(r.out, "deployment %s\n", chargeonce.DeploymentName)
	fmt.Fprintf(r.out, "current: %s\n", versionName(routing.CurrentVersion))
	if routing.RampingVersion != nil {
		fmt.Fprintf(r.out, "ramping: %s at %v%%\n", routing.RampingVersion.BuildID, routing.RampingVersionPercentage)
	} else {
		fmt.Fprintln(r.out, "ramping: none")
	}
	for _, v := range desc.Info.VersionSummaries {
		id := v.Version.BuildID
		n, err := r.pinnedRuns(ctx, id)
		if err != nil {
			return err
		}
		role := "-"
		switch {
		case isVersion(routing.CurrentVersion, id):
			role = "current"
		case isVersion(routing.RampingVersion, id):
			role = "ramping"
		}
		fmt.Fprintf(r.out, "version %s: %s, drainage %s, open runs pinned: %d\n", id, role, drainage(v.DrainageStatus), n)
	}
	return nil
}

// changeError says why the server refused to route new runs to buildID:
// above all a version that no worker has polled as, which the server does
// not know; the fix is to start its workers.
func changeError(what, buildID string, err error) error {
	var notFound *serviceerror.NotFound
	var conflict *serviceerror.FailedPrecondition
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("cannot %s version %s: it has no pollers, as no worker of build %s has polled Worker Deployment %s; start its workers (--build-id %s) first (%w)",
			what, buildID, buildID, chargeonce.DeploymentName, buildID, err)
	case errors.As(err, &conflict):
		return fmt.Errorf("cannot %s version %s: the server refuses (%w); if the deployment changed since it was read, look at rollout status and run again", what, buildID, err)
	}
	return fmt.Errorf("%s version %s of Worker Deployment %s: %w", what, buildID, chargeonce.DeploymentName, err)
}

func (r *rollout) ramp(ctx context.Context, buildID string, percent float32) error {
	desc, err := r.describe(ctx)
	if err != nil {
		return err
	}
	if isVersion(desc.Info.RoutingConfig.CurrentVersion, buildID) {
		return fmt.Errorf("cannot ramp version %s: it is the current version already", buildID)
	}
	_, err = r.deployment.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: buildID, Percentage: percent, ConflictToken: desc.ConflictToken})
	if err != nil {
		return changeError("ramp", buildID, err)
	}
	fmt.Fprintf(r.out, "version %s is ramping: %v%% of the new runs start on it, the others on %s\n", buildID, percent, versionName(desc.Info.RoutingConfig.CurrentVersion))
	return nil
}

func (r *rollout) current(ctx context.Context, buildID string) error {
	desc, err := r.describe(ctx)
	if err != nil {
		return err
	}
	previous := desc.Info.RoutingConfig.CurrentVersion
	if isVersion(previous, buildID) {
		fmt.Fprintf(r.out, "version %s is current already\n", buildID)
		return nil
	}
	_, err = r.deployment.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID, ConflictToken: desc.ConflictToken})
	if err != nil {
		return changeError("make current", buildID, err)
	}
	fmt.Fprintf(r.out, "version %s is current: every new run starts on it; runs pinned to %s finish there\n", buildID, versionName(previous))
	return nil
}

// errNotDrained is drain's answer when the version is not drained: the
// command exits 1, as for any error, and says why.
var errNotDrained = errors.New("not drained")

func (r *rollout) drain(ctx context.Context, buildID string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		reason, err := r.drainedOrWhyNot(ctx, buildID)
		if err != nil {
			return err
		}
		if reason == "" {
			fmt.Fprintf(r.out, "version %s is drained: no open run is pinned to it and it takes no new run; its workers can stop\n", buildID)
			return nil
		}
		if reason == notAVersion {
			// A typo must not read as a drained version; the server also
			// forgets a drained version once its workers are gone.
			fmt.Fprintf(r.out, "version %s is not a version of Worker Deployment %s (any more), and no open run is pinned to it\n", buildID, chargeonce.DeploymentName)
			return nil
		}
		if !time.Now().Add(drainPoll).Before(deadline) {
			if wait > 0 {
				return fmt.Errorf("version %s is %w after %v: %s", buildID, errNotDrained, wait, reason)
			}
			return fmt.Errorf("version %s is %w: %s", buildID, errNotDrained, reason)
		}
		fmt.Fprintf(r.out, "version %s: %s; looking again in %v\n", buildID, reason, drainPoll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainPoll):
		}
	}
}

// drainedOrWhyNot returns "" when buildID takes no new run and no open run
// is pinned to it, notAVersion when besides the deployment does not list
// it, and otherwise why not.
func (r *rollout) drainedOrWhyNot(ctx context.Context, buildID string) (string, error) {
	desc, err := r.describe(ctx)
	if err != nil {
		return "", err
	}
	switch routing := desc.Info.RoutingConfig; {
	case isVersion(routing.CurrentVersion, buildID):
		return "it is the current version", nil
	case isVersion(routing.RampingVersion, buildID):
		return "it is the ramping version", nil
	}
	n, err := r.pinnedRuns(ctx, buildID)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return chargeonce.Plural(int(n), "open run") + " pinned to it", nil
	}
	if !slices.ContainsFunc(desc.Info.VersionSummaries, func(v client.WorkerDeploymentVersionSummary) bool { return v.Version.BuildID == buildID }) {
		return notAVersion, nil
	}
	return "", nil
}

// notAVersion is drainedOrWhyNot's answer for a build ID that the
// deployment does not list, with no open run pinned to it.
const notAVersion = "not a version"

func (r *rollout) pin(ctx context.Context, workflowID, buildID string) error {
	// The server would pin a run to a version that no worker serves, and
	// the run would wait for one; refuse that here.
	if _, err := r.deployment.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID}); err != nil {
		return changeError("pin a run to", buildID, err)
	}
	version := sdkworker.WorkerDeploymentVersion{DeploymentName: chargeonce.DeploymentName, BuildID: buildID}
	if err := r.setOverride(ctx, workflowID, &client.PinnedVersioningOverride{Version: version}); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "workflow %s is pinned to version %s: its next tasks run on that version's workers\n", workflowID, buildID)
	return nil
}

func (r *rollout) unpin(ctx context.Context, workflowID string) error {
	if err := r.setOverride(ctx, workflowID, nil); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "workflow %s has no versioning override: it follows its workflow type's pinned behaviour again\n", workflowID)
	return nil
}

// setOverride sets the versioning override of workflowID's latest run, or
// removes it when override is nil.
func (r *rollout) setOverride(ctx context.Context, workflowID string, override client.VersioningOverride) error {
	_, err := r.c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
		WorkflowId:                      workflowID,
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{VersioningOverride: &client.VersioningOverrideChange{Value: override}},
	})
	if err != nil {
		return fmt.Errorf("change the versioning override of workflow %s: %w", workflowID, err)
	}
	return nil
}
