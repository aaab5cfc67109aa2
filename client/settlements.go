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
