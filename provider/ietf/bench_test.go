package ietf_test

import (
	"context"
	"net/http"
	"testing"

	"chargeonce/provider"
)

// BenchmarkClient_Charge measures one whole charge exchange over loopback
// HTTP: encoding, the breaker, the round trip and the classification.
func BenchmarkClient_Charge(b *testing.B) {
	srv := newServer(b, reply{status: http.StatusCreated, body: chargeObject(b, nil)})
	c := newClient(b, srv.URL)
	req := testCharge()
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Charge(context.Background(), req); res.Outcome != provider.Approved {
			b.Fatalf("outcome %s: %s", res.Outcome, res.Detail)
		}
	}
}

// BenchmarkClient_Refund measures one whole refund exchange over loopback
// HTTP, as BenchmarkClient_Charge does a charge's.
func BenchmarkClient_Refund(b *testing.B) {
	srv := newServer(b, reply{status: http.StatusCreated, body: refundObject(b, nil)})
	c := newClient(b, srv.URL)
	req := testRefund()
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Refund(context.Background(), req); res.Outcome != provider.Approved {
			b.Fatalf("outcome %s: %s", res.Outcome, res.Detail)
		}
	}
}
