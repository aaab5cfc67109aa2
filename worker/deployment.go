package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
)

// DefaultBuildID is the build ID of this binary: its VCS revision (12 hex
// digits), with "-dirty-" and the start of the binary's SHA-256 when the
// tree it was built from had changes, since two dirty builds of one
// revision are different code; and the binary's hash alone when it carries
// no revision, as `go run` and test binaries do. It is computed once.
var DefaultBuildID = sync.OnceValues(func() (string, error) {
	var revision string
	var modified bool
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if len(revision) >= 12 && !modified {
		return revision[:12], nil
	}
	sum, err := executableHash()
	if err != nil {
		return "", fmt.Errorf("worker: no build ID: the binary carries no clean VCS revision and cannot be hashed: %w", err)
	}
	if len(revision) >= 12 {
		return revision[:12] + "-dirty-" + sum, nil
	}
	return "sha-" + sum, nil
})

// executableHash is the start of the SHA-256 of the running binary, in hex.
func executableHash() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// deploymentOptions put a Temporal worker in chargeonce's Worker
// Deployment, as the version buildID.
func deploymentOptions(o sdkworker.Options, buildID string) sdkworker.Options {
	o.DeploymentOptions = sdkworker.DeploymentOptions{
		UseVersioning: true,
		Version:       sdkworker.WorkerDeploymentVersion{DeploymentName: chargeonce.DeploymentName, BuildID: buildID},
	}
	return o
}

// firstCurrentTimeout bounds how long a starting worker waits for the
// server to register its version, which it does once the version's first
// pollers have reached it, usually within a second, and to answer for the
// deployment, which a server that has just started does once it has loaded
// the deployment's records.
const firstCurrentTimeout = time.Minute

// firstCurrentRetry is the pause between two tries while the server has
// not yet registered the version, another worker changed the deployment
// since it was read, or the server is not ready to answer.
const firstCurrentRetry = 100 * time.Millisecond

// becomeCurrentIfNone makes the version buildID, whose workers poll
// already, the deployment's current version when the deployment has none:
// on the first deploy, new runs would otherwise wait for workers without a
// version, and there are none. A deployment with a current version is left
// as it is, whatever version that is: a new version takes over only by the
// rollout (docs/operations.md, "Deploying a new version"). Two workers that
// start together agree through the deployment's conflict token: one sets
// its version, and the other then finds it set.
//
// A server whose Worker Deployments are disabled is an error that says
// which setting to enable.
func becomeCurrentIfNone(ctx context.Context, c client.Client, namespace, buildID string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, firstCurrentTimeout)
	defer cancel()
	h := c.WorkerDeploymentClient().GetHandle(chargeonce.DeploymentName)
	for {
		err := trySetFirstCurrent(ctx, h, buildID, log)
		var denied *serviceerror.PermissionDenied
		var invalid *serviceerror.InvalidArgument
		switch {
		case err == nil:
			return nil
		case errors.As(err, &denied):
			return fmt.Errorf("worker: the Temporal server refuses Worker Deployments in namespace %s (%w): set its dynamic configuration system.enableDeploymentVersions to true", namespace, err)
		case errors.As(err, &invalid):
			return fmt.Errorf("worker: make version %s of Worker Deployment %s current: %w", buildID, chargeonce.DeploymentName, err)
		}
		log.Debug("worker deployment not ready; trying again", "deployment", chargeonce.DeploymentName, "build_id", buildID, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("worker: could not read Worker Deployment %s, or make version %s current, within %s: %w", chargeonce.DeploymentName, buildID, firstCurrentTimeout, err)
		case <-time.After(firstCurrentRetry):
		}
	}
}

// trySetFirstCurrent reads the deployment and, when it has no current
// version, sets buildID's, under the token of what it read.
func trySetFirstCurrent(ctx context.Context, h client.WorkerDeploymentHandle, buildID string, log *slog.Logger) error {
	desc, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return err
	}
	if current := desc.Info.RoutingConfig.CurrentVersion; current != nil {
		log.Info("worker deployment has a current version", "deployment", chargeonce.DeploymentName,
			"current_build_id", current.BuildID, "build_id", buildID, "this_version_current", current.BuildID == buildID)
		return nil
	}
	if _, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID, ConflictToken: desc.ConflictToken}); err != nil {
		return err
	}
	log.Info("worker deployment had no current version: this version is now current", "deployment", chargeonce.DeploymentName, "build_id", buildID)
	return nil
}
