package client

import (
	"context"
	"net/http"
	"net/url"

	"chargeonce/api/wire"
)

// GetSettlement reads the last settlement of a report date ("2026-03-14",
// UTC). Scope operator. A date not settled yet is a *Problem of type
// wire.ProblemNotFound; a date the API cannot settle, of type
// wire.ProblemInvalidRequest.
func (c *Client) GetSettlement(ctx context.Context, date string) (wire.Settlement, error) {
	var s wire.Settlement
	_, err := c.call(ctx, http.MethodGet, settlementPath(date), nil, nil, &s)
	return s, err
}

// SettlementRun is the answer of RunSettlement: one of its fields is set.
type SettlementRun struct {
	// Settlement is the day's settlement, when the run finished in time.
	Settlement *wire.Settlement
	// Running is set when the run goes on: GetSettlement reads it once it
	// is done.
	Running *wire.SettlementRunning
}

// RunSettlement settles a report date now: the provider's report against
// the succeeded payments. Scope operator. Running it again is safe: it
// joins the run in progress, or settles the day again.
func (c *Client) RunSettlement(ctx context.Context, date string) (SettlementRun, error) {
	var run SettlementRun
	done, running := &wire.Settlement{}, &wire.SettlementRunning{}
	a, err := c.call(ctx, http.MethodPost, settlementPath(date)+"/run", wire.SettlementRunRequest{}, nil,
		byStatus{http.StatusOK: done, http.StatusAccepted: running})
	switch {
	case err != nil:
	case a.status == http.StatusAccepted:
		run.Running = running
	default:
		run.Settlement = done
	}
	return run, err
}

func settlementPath(date string) string {
	return "/api/settlements/" + url.PathEscape(date)
}

// ResolveResult is the answer of ResolveException.
type ResolveResult struct {
	// Created is set when this call resolved the exception (201); unset
	// when it was resolved before with the same note (200), which makes
	// a retry safe.
	Created bool
	wire.ExceptionResolution
}

// ResolveException records what was decided about one exception of a
// report date's settlement: exceptionID is the exception's ID as
// GetSettlement shows it, note says what was done and why (free text of 1
// to 1000 characters, not blank). Scope operator. The first resolution is
// kept: sending the same note again answers it, another note is a *Problem
// of type wire.ProblemAlreadyResolved (409) whose Detail names the key
// that resolved it and when. A date never settled, or an exception its
// settlement does not list, is a *Problem of type wire.ProblemNotFound; a
// bad note, of type wire.ProblemInvalidRequest.
func (c *Client) ResolveException(ctx context.Context, date, exceptionID, note string) (ResolveResult, error) {
	var res ResolveResult
	a, err := c.call(ctx, http.MethodPost, settlementPath(date)+"/exceptions/"+url.PathEscape(exceptionID)+"/resolve",
		wire.ResolveExceptionRequest{Note: note}, nil, &res.ExceptionResolution)
	res.Created = err == nil && a.status == http.StatusCreated
	return res, err
}
