package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/checkout"
	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/workflows"
)

// refundMinor is what the recorded refunds return of the charge.
const refundMinor = 10000

// refundScenario is a refund of a paid order, started as the refund API
// starts it: Update-With-Start, waiting for the "refund" update.
type refundScenario struct {
	name   string
	opts   activitiestest.Options
	timing workflows.Timing
	// before acts at the provider once the order is paid, before the refund
	// is sent.
	before func(ctx context.Context, env *activitiestest.Env, r chargeonce.RefundIntent) error
	// during acts once the update has answered.
	during func(ctx context.Context, env *activitiestest.Env, r chargeonce.RefundIntent) error
	want   chargeonce.RefundStatus
}

func refundScenarios() []refundScenario {
	patient := provider.BreakerConfig{ConsecutiveFailures: 1000}
	found := shortUnknown
	found.MinAge, found.Interval, found.AbandonAfter = 3*time.Second, time.Second, 10*time.Second
	return []refundScenario{
		{name: "refund-succeeded", want: chargeonce.RefundSucceeded},
		{
			name: "refund-failed",
			before: func(ctx context.Context, env *activitiestest.Env, r chargeonce.RefundIntent) error {
				// The whole charge was refunded at the provider already.
				key := uuid.Must(uuid.NewV7()).String()
				res := env.Client.Refund(ctx, provider.RefundRequest{
					Key: key, ChargeID: r.ChargeID, Amount: amount.Minor, Currency: amount.Currency,
					MerchantReference: chargeonce.RefundReference(activitiestest.ReferencePrefix, key),
				})
				if res.Outcome != provider.Approved {
					return fmt.Errorf("refund behind the back: %s (%s)", res.Outcome, res.Detail)
				}
				return nil
			},
			want: chargeonce.RefundFailed,
		},
		{
			name: "refund-unknown-found", opts: activitiestest.Options{Breaker: patient}, timing: found,
			before: setMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop}),
			during: func(ctx context.Context, env *activitiestest.Env, r chargeonce.RefundIntent) error {
				return env.RefundBehindTheBack(ctx, r)
			},
			want: chargeonce.RefundSucceeded,
		},
		{
			name: "refund-resent", opts: activitiestest.Options{Breaker: patient}, timing: found,
			before: setMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop}),
			// The provider lost every request; working again, it gets the
			// resend that follows a lookup that found nothing.
			during: setMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}),
			want:   chargeonce.RefundSucceeded,
		},
		{
			name: "refund-not-processed", opts: activitiestest.Options{Breaker: patient}, timing: threeRequests,
			before: setMode(fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}),
			want:   chargeonce.RefundNotProcessed,
		},
	}
}

func setMode(m fakeprovider.Mode) func(context.Context, *activitiestest.Env, chargeonce.RefundIntent) error {
	return func(_ context.Context, env *activitiestest.Env, _ chargeonce.RefundIntent) error {
		return env.Fake.SetMode(m)
	}
}

// run pays an order, stores its refund, starts the refund and waits for the
// outcome the scenario wants.
func (sc refundScenario) run(ctx context.Context, c client.Client, env *activitiestest.Env, taskQueue string) ([]recording, error) {
	intent, _, err := env.CreatePaidIntent(ctx, "tok_visa", amount, time.Now())
	if err != nil {
		return nil, err
	}
	r, err := env.CreateRefund(ctx, intent.OrderID, refundMinor, time.Now())
	if err != nil {
		return nil, err
	}
	if sc.before != nil {
		if err := sc.before(ctx, env, r); err != nil {
			return nil, err
		}
	}
	start := c.NewWithStartWorkflowOperation(onQueue(checkout.StartOptions(workflows.RefundWorkflowID(r.Key), workflows.RefundStartSearchAttributes(r)), taskQueue), workflows.RefundWorkflow, workflows.RefundInput{Intent: r, Timing: sc.timing})
	var answered workflows.RefundResult
	run, err := updateWithStart(ctx, c, start, client.UpdateWorkflowOptions{
		UpdateName: chargeonce.UpdateRefund,
		Args:       []any{workflows.RefundUpdate{Key: r.Key}},
	}, &answered)
	if err != nil {
		return nil, err
	}
	if sc.during != nil {
		if err := sc.during(ctx, env, r); err != nil {
			return nil, err
		}
	}
	var res workflows.RefundResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, err
	}
	if res.Status != sc.want {
		return nil, fmt.Errorf("refund ended %s (%s), want %s", res.Status, res.Message, sc.want)
	}
	return []recording{{file: sc.name, run: run}}, nil
}
