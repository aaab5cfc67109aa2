package workflows

// This file declares the contract of the capture and void workflows that
// the holds branch implements, with stub bodies, so that the services and
// the API that start those workflows compile before it lands. It is
// deleted when the workflows are merged.

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
)

// MoveInput is the input of a capture's or a void's workflow.
type MoveInput struct {
	Intent  chargeonce.MoveIntent `json:"intent"`
	Timing  Timing                `json:"timing"`
	Carried *MoveCarried          `json:"carried,omitempty"`
}

// MoveCarried is what a move's workflow carries over a continue-as-new.
type MoveCarried struct {
	Checks int `json:"checks"`
}

// MoveUpdate is the argument of the update chargeonce.UpdateMove.
type MoveUpdate struct {
	Key string `json:"key,omitempty"`
}

// MoveResult is a move workflow's answer to chargeonce.UpdateMove.
type MoveResult struct {
	// Status is pending while the outcome is unknown.
	Status      chargeonce.MoveStatus `json:"status"`
	DeclineCode string                `json:"declineCode,omitempty"`
	// Hold is the hold's status the move proved, empty when none.
	Hold     chargeonce.HoldStatus `json:"hold,omitempty"`
	Captured int64                 `json:"captured,omitempty"`
	Message  string                `json:"message,omitempty"`
}

// CaptureWorkflow captures a hold (stub of the contract).
func CaptureWorkflow(workflow.Context, MoveInput) (MoveResult, error) { return MoveResult{}, nil }

// VoidWorkflow voids a hold (stub of the contract).
func VoidWorkflow(workflow.Context, MoveInput) (MoveResult, error) { return MoveResult{}, nil }

// MoveWorkflow is the workflow function of a move of this kind.
func MoveWorkflow(kind chargeonce.MoveKind) func(workflow.Context, MoveInput) (MoveResult, error) {
	if kind == chargeonce.MoveCapture {
		return CaptureWorkflow
	}
	return VoidWorkflow
}

// MoveWorkflowID is the workflow ID of the move with this key: the key
// itself.
func MoveWorkflowID(key string) string { return key }

// MoveStartSearchAttributes are the search attributes a move's workflow
// starts with (stub of the contract).
func MoveStartSearchAttributes(chargeonce.MoveIntent) temporal.SearchAttributes {
	return temporal.SearchAttributes{}
}
