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
	return provider.RefundResult{Exchange: p.result.Exchange}
}

func (p *port) FindRefunds(context.Context, string, string) ([]provider.Refund, error) {
	p.calls++
	return nil, p.err
}

func (p *port) Capture(context.Context, provider.CaptureRequest) provider.CaptureResult {
	p.calls++
	return provider.CaptureResult{Exchange: p.result.Exchange}
}

func (p *port) Void(context.Context, provider.VoidRequest) provider.VoidResult {
	p.calls++
	return provider.VoidResult{Exchange: p.result.Exchange}
}

func (p *port) GetCharge(context.Context, string) (provider.Charge, error) {
	p.calls++
	return provider.Charge{}, p.err
}

// The breaker judges outcomes, not a dialect's statuses, so it stands in
// front of any adapter the same way.
func TestBreaker_OpensOnOutcomesOfAnyPort(t *testing.T) {
	cases := []struct {
		name   string
		result provider.Result
		opens  bool
	}{
		{"unknown 5xx", provider.Result{Exchange: provider.Exchange{Outcome: provider.Unavailable, Sent: true, StatusCode: 502}}, true},
		{"refused connection", provider.Result{Exchange: provider.Exchange{Outcome: provider.TransportError}}, true},
		{"timeout", provider.Result{Exchange: provider.Exchange{Outcome: provider.Timeout, Sent: true}}, true},
		{"rate limited", provider.Result{Exchange: provider.Exchange{Outcome: provider.RateLimited, Sent: true, Refused: true, StatusCode: 429}}, false},
		{"in flight", provider.Result{Exchange: provider.Exchange{Outcome: provider.InFlight, Sent: true, StatusCode: 409}}, false},
		{"key reused", provider.Result{Exchange: provider.Exchange{Outcome: provider.ContractViolation, Sent: true, StatusCode: 400}}, false},
		{"refused before sending", provider.Result{Exchange: provider.Exchange{Outcome: provider.InvalidRequest}}, false},
		{"declined", provider.Result{Exchange: provider.Exchange{Outcome: provider.Declined, Sent: true, StatusCode: 402}}, false},
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
	p := &port{err: &provider.Error{Op: "find charges", Outcome: provider.Unavailable, StatusCode: 503}, result: provider.Result{Exchange: provider.Exchange{Outcome: provider.Approved, Sent: true}}}
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

// refundPort answers charges and refunds each with its own canned result,
// and counts the calls of each.
type refundPort struct {
	port
	refund  provider.RefundResult
	refunds int
}

func (p *refundPort) Refund(context.Context, provider.RefundRequest) provider.RefundResult {
	p.refunds++
	return p.refund
}

// Refunds are judged as charges are, by a breaker of their own: a provider
// whose refunds fail keeps taking payments, and the other way round.
func TestBreaker_RefundsOpenTheirOwnBreaker(t *testing.T) {
	failing := provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.Unavailable, Sent: true, StatusCode: 503}}
	approved := provider.Result{Exchange: provider.Exchange{Outcome: provider.Approved, Sent: true, StatusCode: 201}}
	p := &refundPort{port: port{result: approved}, refund: failing}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	for range 2 {
		require.Equal(t, failing, b.Refund(context.Background(), provider.RefundRequest{}))
	}
	held := b.Refund(context.Background(), provider.RefundRequest{})

	require.Equal(t, provider.BreakerOpen, held.Outcome)
	require.Contains(t, held.Detail, "provider-refunds is open")
	require.True(t, held.NotProcessed(), "an open breaker sends nothing")
	require.Equal(t, 2, p.refunds)
	require.Equal(t, approved, b.Charge(context.Background(), provider.ChargeRequest{}), "charges have their own breaker")
	_, err = b.FindRefunds(context.Background(), "ch_1", "ref")
	require.NoError(t, err, "so have lookups")
}

func TestBreaker_AChargeOutageHoldsNoRefundBack(t *testing.T) {
	refunded := provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.Approved, Sent: true, StatusCode: 201}}
	p := &refundPort{port: port{result: provider.Result{Exchange: provider.Exchange{Outcome: provider.TransportError, Sent: true}}}, refund: refunded}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	b.Charge(context.Background(), provider.ChargeRequest{})
	require.Equal(t, provider.BreakerOpen, b.Charge(context.Background(), provider.ChargeRequest{}).Outcome)

	require.Equal(t, refunded, b.Refund(context.Background(), provider.RefundRequest{}))
}

// A refund's outcomes count as a charge's do: a refusal is a deliberate
// answer, a 429 is no signal, and a request the caller gave up on says
// nothing about the provider.
func TestBreaker_RefundVerdicts(t *testing.T) {
	cases := []struct {
		name   string
		result provider.RefundResult
		opens  bool
	}{
		{"timeout", provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.Timeout, Sent: true}}, true},
		{"refused", provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.Declined, Sent: true, StatusCode: 402}, DeclineCode: "charge_already_refunded"}, false},
		{"rate limited", provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.RateLimited, Sent: true, Refused: true, StatusCode: 429}}, false},
		{"in flight", provider.RefundResult{Exchange: provider.Exchange{Outcome: provider.InFlight, Sent: true, StatusCode: 409}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &refundPort{refund: tc.result}
			b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)

			b.Refund(context.Background(), provider.RefundRequest{})
			res := b.Refund(context.Background(), provider.RefundRequest{})

			require.Equal(t, tc.opens, res.Outcome == provider.BreakerOpen, res.Detail)
		})
	}
}

func TestBreaker_RefundLookupsShareTheLookupBreaker(t *testing.T) {
	p := &port{err: &provider.Error{Op: "find refunds", Outcome: provider.Unavailable, StatusCode: 503}}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	_, err = b.FindRefunds(context.Background(), "ch_1", "ref")
	require.ErrorContains(t, err, "HTTP 503")
	_, err = b.FindCharges(context.Background(), "ref")

	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.BreakerOpen, perr.Outcome)
	require.Equal(t, 1, p.calls)
}

func TestBreaker_RefundAfterTheContextEndedSendsNothing(t *testing.T) {
	p := &refundPort{}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	res := b.Refund(ctx, provider.RefundRequest{})

	require.Equal(t, provider.Timeout, res.Outcome)
	require.False(t, res.Sent)
	require.Zero(t, p.refunds)
}

// holdPort answers charges with its canned result and captures and voids
// with another, and counts the captures and voids.
type holdPort struct {
	port
	hold  provider.Exchange
	holds int
}

func (p *holdPort) Capture(context.Context, provider.CaptureRequest) provider.CaptureResult {
	p.holds++
	return provider.CaptureResult{Exchange: p.hold}
}

func (p *holdPort) Void(context.Context, provider.VoidRequest) provider.VoidResult {
	p.holds++
	return provider.VoidResult{Exchange: p.hold}
}

// Captures and voids share a breaker of their own: a failing capture
// service stops neither payments nor refunds, and a declined capture is a
// deliberate answer.
func TestBreaker_HoldsOpenTheirOwnBreaker(t *testing.T) {
	failing := provider.Exchange{Outcome: provider.Unavailable, Sent: true, StatusCode: 503}
	approved := provider.Result{Exchange: provider.Exchange{Outcome: provider.Approved, Sent: true, StatusCode: 201}}
	p := &holdPort{port: port{result: approved}, hold: failing}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	require.Equal(t, failing, b.Capture(context.Background(), provider.CaptureRequest{}).Exchange)
	require.Equal(t, failing, b.Void(context.Background(), provider.VoidRequest{}).Exchange)
	held := b.Capture(context.Background(), provider.CaptureRequest{})
	voided := b.Void(context.Background(), provider.VoidRequest{})

	for _, x := range []provider.Exchange{held.Exchange, voided.Exchange} {
		require.Equal(t, provider.BreakerOpen, x.Outcome)
		require.Contains(t, x.Detail, "provider-holds is open")
		require.Equal(t, provider.ClassNotProcessed, x.Class(), "an open breaker sends nothing")
	}
	require.Equal(t, 2, p.holds)
	require.Equal(t, approved, b.Charge(context.Background(), provider.ChargeRequest{}), "charges have their own breaker")
	require.Equal(t, provider.Approved, b.Refund(context.Background(), provider.RefundRequest{}).Outcome, "so have refunds")
	_, err = b.GetCharge(context.Background(), "ch_1")
	require.NoError(t, err, "and reads of a charge are lookups")
}

func TestBreaker_DeclinedCapturesKeepTheHoldBreakerClosed(t *testing.T) {
	declined := provider.Exchange{Outcome: provider.Declined, Sent: true, StatusCode: 403}
	p := &holdPort{hold: declined}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	b.Capture(context.Background(), provider.CaptureRequest{})
	res := b.Void(context.Background(), provider.VoidRequest{})

	require.Equal(t, provider.Declined, res.Outcome)
	require.Equal(t, 2, p.holds)
}

func TestBreaker_GetChargeSharesTheLookupBreaker(t *testing.T) {
	p := &port{err: &provider.Error{Op: "get charge", Outcome: provider.Unavailable, StatusCode: 503}}
	b, err := provider.NewBreaker(p, provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	_, err = b.GetCharge(context.Background(), "ch_1")
	require.ErrorContains(t, err, "HTTP 503")
	_, err = b.FindCharges(context.Background(), "ref")

	var perr *provider.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, provider.BreakerOpen, perr.Outcome)
	require.Equal(t, 1, p.calls)
}
