// Package rollout moves new runs from one version of the Worker Deployment
// chargeonce (chargeonce.DeploymentName) to another, each version named by
// its workers' build ID: it ramps and makes a version current, tells when
// a version has drained, and moves the runs of a bad version with a
// versioning override. Every change is made under the deployment's
// conflict token, so that two operators, or an operator and a starting
// worker, never overwrite each other's change unseen.
//
// cmd/rollout is its command line, and the rollout drill on the cluster
// (verify/chaos) drives the same calls; docs/operations.md ("Deploying a
// new version") gives the whole rollout.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
)

// DrainPoll is the pause between two looks at a draining version.
const DrainPoll = 2 * time.Second

// ErrNotDrained is Drain's answer when the version is not drained.
var ErrNotDrained = errors.New("not drained")

// Rollout is a connection to the deployment. Each change it makes, and
// each wait, is told on its output.
type Rollout struct {
	c          client.Client
	deployment client.WorkerDeploymentHandle
	out        io.Writer
}

// New is a Rollout of the deployment in c's namespace, telling on out.
func New(c client.Client, out io.Writer) *Rollout {
	return &Rollout{c: c, deployment: c.WorkerDeploymentClient().GetHandle(chargeonce.DeploymentName), out: out}
}

// PinnedRuns counts the open runs pinned to buildID, through visibility,
// which lags the runs by up to a second or so.
func (r *Rollout) PinnedRuns(ctx context.Context, buildID string) (int64, error) {
	res, err := r.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: chargeonce.PinnedRunsQuery(buildID)})
	if err != nil {
		return 0, fmt.Errorf("count the open runs pinned to version %s: %w", buildID, err)
	}
	return res.GetCount(), nil
}

func (r *Rollout) describe(ctx context.Context) (client.WorkerDeploymentDescribeResponse, error) {
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

// Status writes the current and ramping versions, for every version its
// role, its drainage and its open pinned runs, and the open runs that no
// version holds yet (chargeonce.UnversionedRunsQuery).
func (r *Rollout) Status(ctx context.Context) error {
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
		n, err := r.PinnedRuns(ctx, id)
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
	res, err := r.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: chargeonce.UnversionedRunsQuery})
	if err != nil {
		return fmt.Errorf("count the open runs with no version: %w", err)
	}
	fmt.Fprintf(r.out, "open runs with no version: %d\n", res.GetCount())
	return nil
}

// changeError says why the server refused to route runs to buildID: above
// all a version that no worker has polled as, which the server does not
// know; the fix is to start its workers.
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

// Ramp sends percent of the new runs (0 < percent < 100) to buildID, and
// the others to the current version.
func (r *Rollout) Ramp(ctx context.Context, buildID string, percent float32) error {
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

// Current sends every new run to buildID; the runs pinned to the version
// current before finish there.
func (r *Rollout) Current(ctx context.Context, buildID string) error {
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

// Drain returns nil once buildID is drained: neither current nor ramping,
// and no open run pinned to it, so that its workers can stop. It looks
// every DrainPoll until wait has passed (once for 0), and then returns an
// error that wraps ErrNotDrained and says why not.
func (r *Rollout) Drain(ctx context.Context, buildID string, wait time.Duration) error {
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
		if !time.Now().Add(DrainPoll).Before(deadline) {
			if wait > 0 {
				return fmt.Errorf("version %s is %w after %v: %s", buildID, ErrNotDrained, wait, reason)
			}
			return fmt.Errorf("version %s is %w: %s", buildID, ErrNotDrained, reason)
		}
		fmt.Fprintf(r.out, "version %s: %s; looking again in %v\n", buildID, reason, DrainPoll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(DrainPoll):
		}
	}
}

// drainedOrWhyNot returns "" when buildID takes no new run and no open run
// is pinned to it, notAVersion when besides the deployment does not list
// it, and otherwise why not.
func (r *Rollout) drainedOrWhyNot(ctx context.Context, buildID string) (string, error) {
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
	n, err := r.PinnedRuns(ctx, buildID)
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

// Pin moves the open run of workflowID to buildID with a pinned versioning
// override: the rescue from a bad version that the run reached. buildID's
// code must replay the run's history.
func (r *Rollout) Pin(ctx context.Context, workflowID, buildID string) error {
	if err := r.servesPinned(ctx, buildID); err != nil {
		return err
	}
	if err := r.pin(ctx, workflowID, buildID); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "workflow %s is pinned to version %s: its next tasks run on that version's workers\n", workflowID, buildID)
	return nil
}

// PinAll moves every open run pinned to from onto buildID, as Pin moves
// one, and returns the workflow IDs of those it moved. It lists the runs through
// visibility, so a run that started on from within the last second or so
// may be missed: make another version current first, so that no new run
// starts on from, and run it again until it moves none.
func (r *Rollout) PinAll(ctx context.Context, from, buildID string) ([]string, error) {
	if from == buildID {
		return nil, fmt.Errorf("cannot move the runs of version %s onto itself", from)
	}
	if err := r.servesPinned(ctx, buildID); err != nil {
		return nil, err
	}
	var ids []string
	var token []byte
	for {
		page, err := r.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: chargeonce.PinnedRunsQuery(from), NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the open runs pinned to version %s: %w", from, err)
		}
		for _, e := range page.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	for i, id := range ids {
		if err := r.pin(ctx, id, buildID); err != nil {
			return ids[:i], err
		}
	}
	fmt.Fprintf(r.out, "%s of version %s pinned to version %s: their next tasks run on that version's workers\n", chargeonce.Plural(len(ids), "open run"), from, buildID)
	return ids, nil
}

// servesPinned refuses a version that no worker serves: the server would
// pin a run to it, and the run would wait for one.
func (r *Rollout) servesPinned(ctx context.Context, buildID string) error {
	if _, err := r.deployment.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: buildID}); err != nil {
		return changeError("pin a run to", buildID, err)
	}
	return nil
}

func (r *Rollout) pin(ctx context.Context, workflowID, buildID string) error {
	version := sdkworker.WorkerDeploymentVersion{DeploymentName: chargeonce.DeploymentName, BuildID: buildID}
	return r.setOverride(ctx, workflowID, &client.PinnedVersioningOverride{Version: version})
}

// Unpin takes the versioning override of workflowID's open run away: it
// follows its workflow type's pinned behaviour again.
func (r *Rollout) Unpin(ctx context.Context, workflowID string) error {
	if err := r.setOverride(ctx, workflowID, nil); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "workflow %s has no versioning override: it follows its workflow type's pinned behaviour again\n", workflowID)
	return nil
}

// setOverride sets the versioning override of workflowID's latest run, or
// removes it when override is nil.
func (r *Rollout) setOverride(ctx context.Context, workflowID string, override client.VersioningOverride) error {
	_, err := r.c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
		WorkflowId:                      workflowID,
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{VersioningOverride: &client.VersioningOverrideChange{Value: override}},
	})
	if err != nil {
		return fmt.Errorf("change the versioning override of workflow %s: %w", workflowID, err)
	}
	return nil
}
