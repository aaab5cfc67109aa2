package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

func TestClient_ResolvesASettlementExceptionOnce(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t, apikey.ScopeOperator)
	exception := store.SettlementException{Seq: 1, Kind: chargeonce.ExceptionUnknownCharge, ChargeID: "ch_000007", LineNo: 4,
		ReportedMinor: 12000, ReportedCurrency: "TRY", Detail: "Refund charge ch_000007."}
	require.NoError(t, a.store.AddSettlementExceptions(ctx, chargeonce.DefaultProvider, "2026-03-14", "r1", []store.SettlementException{exception}))
	require.NoError(t, a.store.FinishSettlementRun(ctx, store.SettlementRun{Provider: chargeonce.DefaultProvider, Date: "2026-03-14", RunID: "r1", Status: store.SettlementFinal,
		Lines: 1, Exceptions: 1, FinishedAt: time.Now()}))

	s, err := api.GetSettlement(ctx, "", "2026-03-14")
	require.NoError(t, err)
	require.Len(t, s.Exceptions, 1)
	require.Equal(t, 1, s.OpenExceptions)
	id := s.Exceptions[0].ID
	require.Equal(t, store.ExceptionID("2026-03-14", exception), id)

	res, err := api.ResolveException(ctx, "", "2026-03-14", id, "Refunded; ticket OPS-812.")
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, id, res.ExceptionID)
	require.Equal(t, "Refunded; ticket OPS-812.", res.Note)
	again, err := api.ResolveException(ctx, "", "2026-03-14", id, "Refunded; ticket OPS-812.")
	require.NoError(t, err)
	require.False(t, again.Created, "a retry answers the resolution kept")
	require.Equal(t, res.ExceptionResolution, again.ExceptionResolution)

	_, err = api.ResolveException(ctx, "", "2026-03-14", id, "Written off.")
	p := requireProblem(t, err, http.StatusConflict, wire.ProblemAlreadyResolved)
	require.Contains(t, p.Detail, res.ResolvedBy.KeyID)
	_, err = api.ResolveException(ctx, "", "2026-03-14", "0123456789abcdef", "done")
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)
	_, err = a.badInputClient(t, apikey.ScopeOperator).ResolveException(ctx, "", "2026-03-14", id, "")
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)

	s, err = api.GetSettlement(ctx, "", "2026-03-14")
	require.NoError(t, err)
	require.Equal(t, 0, s.OpenExceptions)
	require.Equal(t, &res.ExceptionResolution, s.Exceptions[0].Resolution)
	require.Equal(t, chargeonce.DefaultProvider, s.Provider)
	named, err := api.GetSettlement(ctx, chargeonce.DefaultProvider, "2026-03-14")
	require.NoError(t, err)
	require.Equal(t, s, named, "the default provider's books, named or not")

	// Another provider's books of the same date are its own.
	_, err = api.GetSettlement(ctx, "backup", "2026-03-14")
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)
	_, err = api.ResolveException(ctx, "backup", "2026-03-14", id, "Refunded; ticket OPS-812.")
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)
	_, err = a.badInputClient(t, apikey.ScopeOperator).GetSettlement(ctx, "Not A Name", "2026-03-14")
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = api.RunSettlement(ctx, "backup", "2026-03-14")
	p = requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	require.Contains(t, p.Detail, `payments are not routed to "backup"`)
}

func TestClient_ReadsTheAuditLogPageByPage(t *testing.T) {
	ctx := context.Background()
	a := startAPI(t, true)
	api := a.client(t, apikey.ScopeOperator)
	var created []string
	for range 3 {
		e, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{URL: "https://shop.example/events"})
		require.NoError(t, err)
		created = append(created, "/api/webhook-endpoints/"+e.ID)
	}

	var results []string
	pages := 0
	for before := int64(0); ; {
		page, err := api.AuditLog(ctx, before, 2)
		require.NoError(t, err)
		pages++
		for _, e := range page.Entries {
			require.Equal(t, "create_endpoint", e.Action)
			require.Equal(t, http.StatusCreated, e.Status)
			results = append(results, e.Result)
		}
		if page.NextBefore == nil {
			break
		}
		before = *page.NextBefore
	}
	require.Equal(t, 2, pages)
	require.Equal(t, []string{created[2], created[1], created[0]}, results, "newest first")

	_, err := a.badInputClient(t, apikey.ScopeOperator).AuditLog(ctx, 0, 201)
	requireProblem(t, err, http.StatusBadRequest, wire.ProblemInvalidRequest)
	_, err = a.client(t, apikey.ScopeRefund).AuditLog(ctx, 0, 0)
	requireProblem(t, err, http.StatusForbidden, wire.ProblemForbidden)
}

// The refund routes, which the API serves with a refund service, are
// audited as the others are, under the key the client sent.
func TestClient_ARefundRequestIsInTheAuditLog(t *testing.T) {
	ctx := context.Background()
	api := startAPI(t, true).client(t)

	_, err := api.RefundCharge(ctx, "ch_000001", "refund-1", wire.RefundRequest{Reason: "unknown charge"})
	p := requireProblem(t, err, http.StatusConflict, wire.ProblemNotRefundable)
	_, err = api.RefundOrder(ctx, 999999, "refund-2", wire.RefundRequest{})
	requireProblem(t, err, http.StatusNotFound, wire.ProblemNotFound)

	page, err := api.AuditLog(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, page.Entries, 2)
	order, charge := page.Entries[0], page.Entries[1]
	require.Equal(t, "refund_charge", charge.Action)
	require.Equal(t, "/api/charges/ch_000001/refunds", charge.Path)
	require.JSONEq(t, `{"reason": "unknown charge"}`, charge.Request)
	require.NotNil(t, charge.IdempotencyKey)
	require.Equal(t, "refund-1", *charge.IdempotencyKey)
	require.Equal(t, http.StatusConflict, charge.Status)
	require.Equal(t, p.Detail, charge.Result)
	require.Equal(t, "refund_order", order.Action)
	require.Equal(t, http.StatusNotFound, order.Status)
}
