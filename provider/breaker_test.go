package provider_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

// port answers every call with its canned result and counts the calls.
type port struct {
	result provider.Result
	err    error
	calls  int
}

func (p *port) Charge(context.Context, provider.ChargeRequest) provider.Result {
	p.calls++
	return p.result
}

func (p *port) FindCharges(context.Context, string) ([]provider.Charge, error) {
	p.calls++
	return nil, p.err
}

func (p *port) Limits(context.Context) (provider.Limits, error) {
	p.calls++
	return provider.Limits{}, p.err
}

func (p *port) Refund(context.Context, provider.RefundRequest) provider.RefundResult {
	p.calls++
	return provider.RefundResult{Outcome: p.result.Outcome, Sent: p.result.Sent, Refused: p.result.Refused, StatusCode: p.result.StatusCode}
}

func (p *port) FindRefunds(context.Context, string, string) ([]provider.Refund, error) {
	p.calls++
	return nil, p.err
}

// The breaker judges outcomes, not a dialect's statuses, so it stands in
// front of any adapter the same way.
func TestBreaker_OpensOnOutcomesOfAnyPort(t *testing.T) {
	cases := []struct {
		name   string
		result provider.Result
		opens  bool
	}{
		{"unknown 5xx", provider.Result{Outcome: provider.Unavailable, Sent: true, StatusCode: 502}, true},
		{"refused connection", provider.Result{Outcome: provider.TransportError}, true},
		{"timeout", provider.Result{Outcome: provider.Timeout, Sent: true}, true},
		{"rate limited", provider.Result{Outcome: provider.RateLimited, Sent: true, Refused: true, StatusCode: 429}, false},
		{"in flight", provider.Result{Outcome: provider.InFlight, Sent: true, StatusCode: 409}, false},
		{"key reused", provider.Result{Outcome: provider.ContractViolation, Sent: true, StatusCode: 400}, false},
		{"refused before sending", provider.Result{Outcome: provider.InvalidRequest}, false},
		{"declined", provider.Result{Outcome: provider.Declined, Sent: true, StatusCode: 402}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &port{result: tc.result}
			b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)

			for range 2 {
				require.Equal(t, tc.result, b.Charge(context.Background(), provider.ChargeRequest{}))
			}
			res := b.Charge(context.Background(), provider.ChargeRequest{})

			if tc.opens {
				require.Equal(t, provider.BreakerOpen, res.Outcome)
				require.True(t, res.NotProcessed())
				require.Equal(t, 2, p.calls, "an open breaker calls nothing")
			} else {
				require.Equal(t, tc.result, res)
				require.Equal(t, 3, p.calls)
			}
		})
	}
}

func TestBreaker_LookupsOpenOnTheirOwn(t *testing.T) {
	p := &port{err: &provider.Error{Op: "find charges", Outcome: provider.Unavailable, StatusCode: 503}, result: provider.Result{Outcome: provider.Approved, Sent: true}}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	_, err = b.FindCharges(context.Background(), "ref")
	require.ErrorContains(t, err, "HTTP 503")
	_, err = b.Limits(context.Background())
	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.BreakerOpen, perr.Outcome)

	require.Equal(t, provider.Approved, b.Charge(context.Background(), provider.ChargeRequest{}).Outcome, "charges have their own breaker")
	require.Equal(t, 2, p.calls)
}
