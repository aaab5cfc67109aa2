package client

import (
	"context"
	"net/http"
	"net/url"

	"chargeonce/api/wire"
)

// GetSettlement reads the last settlement of a provider's report date
// ("2026-03-14", UTC): each provider's books are settled on their own, and
// an empty provider is the API's default one. Scope operator. A date not
// settled yet is a *Problem of type wire.ProblemNotFound; a date the API
// cannot settle, or a malformed provider name, of type
// wire.ProblemInvalidRequest.
func (c *Client) GetSettlement(ctx context.Context, provider, date string) (wire.Settlement, error) {
	var s wire.Settlement
	_, err := c.call(ctx, http.MethodGet, settlementPath(provider, date, ""), nil, nil, &s)
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

// RunSettlement settles a provider's report date now (an empty provider is
// the API's default one): the provider's report against the payments that
// succeeded there. Scope operator. Running it again is safe: it joins the
// run in progress, or settles the day again. A provider that payments are
// not routed to is a *Problem of type wire.ProblemInvalidRequest.
func (c *Client) RunSettlement(ctx context.Context, provider, date string) (SettlementRun, error) {
	var run SettlementRun
	done, running := &wire.Settlement{}, &wire.SettlementRunning{}
	a, err := c.call(ctx, http.MethodPost, settlementPath(provider, date, "/run"), wire.SettlementRunRequest{}, nil,
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

// settlementPath is the path of a provider's settlement of date, followed
// by then, such as "/run"; an empty provider names none, which is the
// API's default one.
func settlementPath(provider, date, then string) string {
	p := "/api/settlements/" + url.PathEscape(date) + then
	if provider != "" {
		p += "?" + url.Values{"provider": {provider}}.Encode()
	}
	return p
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
// provider's report date's settlement (an empty provider is the API's
// default one): exceptionID is the exception's ID as
// GetSettlement shows it, note says what was done and why (free text of 1
// to 1000 characters, not blank). Scope operator. The first resolution is
// kept: sending the same note again answers it, another note is a *Problem
// of type wire.ProblemAlreadyResolved (409) whose Detail names the key
// that resolved it and when. A date never settled, or an exception its
// settlement does not list, is a *Problem of type wire.ProblemNotFound; a
// bad note, of type wire.ProblemInvalidRequest.
func (c *Client) ResolveException(ctx context.Context, provider, date, exceptionID, note string) (ResolveResult, error) {
	var res ResolveResult
	a, err := c.call(ctx, http.MethodPost, settlementPath(provider, date, "/exceptions/"+url.PathEscape(exceptionID)+"/resolve"),
		wire.ResolveExceptionRequest{Note: note}, nil, &res.ExceptionResolution)
	res.Created = err == nil && a.status == http.StatusCreated
	return res, err
}
