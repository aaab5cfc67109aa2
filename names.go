package chargeonce

import (
	"fmt"
	"regexp"
)

// DefaultProvider is the name of a deployment's one provider unless its
// configuration names it otherwise, and the name that the attempts and the
// refunds stored before providers were named carry.
const DefaultProvider = "default"

var providerNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)

// CheckProviderName refuses a name that cannot name a provider: a name is
// a lower-case letter followed by at most 62 lower-case letters, digits,
// '_' or '-'.
func CheckProviderName(name string) error {
	if !providerNamePattern.MatchString(name) {
		return fmt.Errorf("provider name %q must be a lower-case letter followed by at most 62 lower-case letters, digits, _ or -", name)
	}
	return nil
}

// buildIDPattern is what a build ID may be: Temporal allows up to 255
// characters; these are the ones that read the same in a flag, a metric
// label, a log line and the Web UI.
var buildIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,254}$`)

// CheckBuildID refuses a build ID that cannot name a version of the
// deployment DeploymentName: empty, longer than 255 characters, or with a
// character other than letters, digits, '.', '_', '+' and '-' (a letter or
// digit first). The worker takes its version's build ID through it, and the
// rollout command the versions it is told to move runs to.
func CheckBuildID(id string) error {
	if !buildIDPattern.MatchString(id) {
		return fmt.Errorf("build ID %q must be 1 to 255 letters, digits, '.', '_', '+' or '-', starting with a letter or digit", id)
	}
	return nil
}

// DeploymentName is the Temporal Worker Deployment that every chargeonce
// worker joins, with its build as the deployment's version: docs/design.md
// ("Deploying new workflow code") says how a new version takes over.
const DeploymentName = "chargeonce"

// PinnedRunsQuery is the visibility query of the open runs pinned to the
// version buildID of DeploymentName: the server's own test of a version's
// drainage. The server keeps TemporalWorkerDeploymentVersion at
// "deployment:build ID", the version a run is pinned to, by a versioning
// override if it has one. A build ID passes CheckBuildID, so it holds no
// quote. The rollout command counts a version's pinned runs with it, and
// the worker's gauge chargeonce_pinned_runs each version's.
func PinnedRunsQuery(buildID string) string {
	return fmt.Sprintf("TemporalWorkerDeploymentVersion = '%s:%s' AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'",
		DeploymentName, buildID)
}

// UnversionedRunsQuery is the visibility query of the open runs that no
// version of DeploymentName holds: runs started before the workers joined
// the deployment, and runs whose first workflow task has not completed
// yet. They run on the current version at their next task, so the
// workflow.GetVersion gates that predate versioning guard them; a gate
// can retire once none started before its change is open. The rollout
// command counts them.
const UnversionedRunsQuery = "TemporalWorkflowVersioningBehavior IS NULL AND ExecutionStatus = 'Running'"

// TaskQueue is the Temporal task queue that the payment workers poll.
const TaskQueue = "chargeonce-payments"

// LookupTaskQueue is the Temporal task queue of the lookups at the provider
// named DefaultProvider, and of the lookups of the runs whose intent names
// no provider (the FindCharge and FindRefund activities). Lookups have
// queues of their own so that Temporal can cap each queue's dispatch rate
// at the rate its provider publishes, across every worker, without slowing
// charges down. LookupTaskQueueOf names the queue of each provider.
const LookupTaskQueue = "chargeonce-lookups"

// LookupTaskQueueOf is the task queue of the lookups at the provider named
// provider: LookupTaskQueue for the empty name and for DefaultProvider, so
// that the runs recorded before intents named their provider, and a
// deployment whose one provider keeps the default name, use the queue they
// always used; LookupTaskQueue, "-" and the name for any other. A provider
// name passes CheckProviderName, which keeps the queue's name within
// Temporal's rules.
func LookupTaskQueueOf(provider string) string {
	if provider == "" || provider == DefaultProvider {
		return LookupTaskQueue
	}
	return LookupTaskQueue + "-" + provider
}

// Names of the payment workflow's handlers.
const (
	// UpdateCharge asks the workflow for the outcome of the charge; it is
	// the update of Update-With-Start from the checkout.
	UpdateCharge = "charge"
	// UpdateProviderEvent tells the workflow that the provider reported a
	// charge (a webhook), which ends reconciliation early. It is an update,
	// not a signal: a signal that arrives while the workflow's first task
	// charges the card fails the task that would complete the workflow, so
	// that its charge request is sent again, and the checkout's update is
	// lost; an update waits for the next task, or ends with the workflow.
	UpdateProviderEvent = "provider-event"
	// SignalProviderEvent is what API processes of earlier releases send
	// instead of UpdateProviderEvent; the workflow takes both.
	SignalProviderEvent = "provider-event"
	// QueryStatus returns the workflow's phase, next check time, number of
	// checks and last error.
	QueryStatus = "status"
)

// Names of the refund workflow's handlers. It answers QueryStatus too.
const (
	// UpdateRefund asks the refund workflow for the outcome of its send
	// phase; it is the update of Update-With-Start from the refund API.
	UpdateRefund = "refund"
	// SignalRefundEvent tells the refund workflow that the provider
	// reported the refund (a webhook), which makes it look the refund up at
	// once.
	SignalRefundEvent = "refund-event"
)

// Names of the handlers of holds and of their moves. A capture's and a
// void's workflows answer QueryStatus too.
const (
	// UpdateMove asks a capture's or a void's workflow for the outcome of
	// its send phase; it is the update of Update-With-Start from the API.
	UpdateMove = "move"
	// SignalMoveEvent tells a capture's or a void's workflow that the
	// provider reported the hold (a webhook), which makes it look the hold
	// up at once.
	SignalMoveEvent = "move-event"
	// SignalHoldMoved tells the payment workflow that keeps a hold that a
	// move of the hold settled, so that it stops waiting for the deadline
	// once the hold has ended.
	SignalHoldMoved = "hold-moved"
)

// Operation names a kind of money movement: each runs as a workflow of its
// own, under its own idempotency key. It is the value of the Operation
// search attribute, which lets the Temporal Web UI list the workflows of one
// kind, and it names the operation in logs.
type Operation string

// The operations.
const (
	// OperationCharge takes a payment intent's money: PaymentWorkflow.
	OperationCharge Operation = "charge"
	// OperationRefund returns money from a charge: RefundWorkflow.
	OperationRefund Operation = "refund"
	// OperationCapture takes money from a hold: CaptureWorkflow.
	OperationCapture Operation = "capture"
	// OperationVoid releases a hold: VoidWorkflow.
	OperationVoid Operation = "void"
)
