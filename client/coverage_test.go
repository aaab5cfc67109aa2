package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/api/wire"
	"chargeonce/client"
	"chargeonce/docs"
)

// notForMerchants are the operations of the document that the client leaves
// out on purpose, with why.
var notForMerchants = map[string]string{
	"receiveProviderEvent":      "the default payment provider's signed events, which the provider sends",
	"receiveNamedProviderEvent": "a payment provider's signed events, which the provider sends",
	"metrics":                   "Prometheus scrapes it",
	"openapi":                   "the document itself, for generators and validators",
}

// TestClient_CallsEveryOperationOfTheDocument holds the client to the
// OpenAPI document, the one owner of the wire format: each of its
// operations, but those of notForMerchants, is sent by one of the client's
// methods, so that a route added to the API without its method fails here.
func TestClient_CallsEveryOperationOfTheDocument(t *testing.T) {
	var (
		mu   sync.Mutex
		sent []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	api := client.New(srv.URL, "ck_x")
	ctx := context.Background()
	calls := []func() error{
		func() error { _, err := api.Health(ctx); return err },
		func() error { _, err := api.CreateOrder(ctx, "1.00", "TRY", ""); return err },
		func() error { _, err := api.GetOrder(ctx, 1); return err },
		func() error { _, err := api.Checkout(ctx, 1, "tok_visa"); return err },
		func() error { _, err := api.OrderEvents(ctx, 1); return err },
		func() error { _, err := api.RefundOrder(ctx, 1, "", wire.RefundRequest{}); return err },
		func() error { _, err := api.RefundCharge(ctx, "ch_1", "", wire.RefundRequest{}); return err },
		func() error { _, err := api.GetRefund(ctx, "r"); return err },
		func() error { _, err := api.Capture(ctx, 1, nil, ""); return err },
		func() error { _, err := api.Void(ctx, 1, ""); return err },
		func() error { _, err := api.GetCapture(ctx, "c"); return err },
		func() error { _, err := api.GetVoid(ctx, "v"); return err },
		func() error { _, err := api.GetSettlement(ctx, "", "2026-03-14"); return err },
		func() error { _, err := api.RunSettlement(ctx, "", "2026-03-14"); return err },
		func() error { _, err := api.CreateEndpoint(ctx, wire.CreateEndpointRequest{}); return err },
		func() error { _, err := api.Endpoints(ctx); return err },
		func() error { _, err := api.GetEndpoint(ctx, "we_1"); return err },
		func() error { _, err := api.DisableEndpoint(ctx, "we_1"); return err },
		func() error { _, err := api.EnableEndpoint(ctx, "we_1"); return err },
		func() error { _, err := api.RotateEndpointSecret(ctx, "we_1", wire.RotateSecretRequest{}); return err },
		func() error { _, err := api.Deliveries(ctx, "we_1", 0); return err },
		func() error { _, err := api.ReplayEvent(ctx, "evt_1", "we_1"); return err },
		func() error { _, err := api.ResolveException(ctx, "", "2026-03-14", "e1", "n"); return err },
		func() error { _, err := api.AuditLog(ctx, 0, 0); return err },
	}
	for _, call := range calls {
		require.NoError(t, call())
	}

	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(docs.OpenAPI, &doc))
	param := regexp.MustCompile(`\{[^}]+\}`)
	var missing []string
	for path, ops := range doc.Paths {
		pieces := param.Split(path, -1)
		for i, piece := range pieces {
			pieces[i] = regexp.QuoteMeta(piece)
		}
		route := regexp.MustCompile("^" + strings.Join(pieces, "[^/]+") + "$")
		for method, op := range ops {
			method = strings.ToUpper(method)
			if _, ok := notForMerchants[op.OperationID]; ok || !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, method) {
				continue
			}
			if !slices.ContainsFunc(sent, func(s string) bool {
				m, p, _ := strings.Cut(s, " ")
				return m == method && route.MatchString(p)
			}) {
				missing = append(missing, op.OperationID+" ("+method+" "+path+")")
			}
		}
	}
	require.Empty(t, missing, "operations of docs/openapi.json that no method of the client sends")
}
