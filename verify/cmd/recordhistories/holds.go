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
	"chargeonce/hold"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// The hold windows of the fake in the hold scenarios, with holdTiming: a
// short one whose deadline (3s after the authorization) and expiry (6s)
// come within seconds, and one whose deadline no scenario reaches, so that
// the merchant's move ends the hold first however slow the machine.
const (
	shortHold = 6 * time.Second
	longHold  = 10 * time.Minute
)

// holdTiming puts the deadline 3s before the hold's expiry and the warning
// a second before the deadline; the rest is DefaultTiming's.
var holdTiming = workflows.Timing{HoldMargin: 3 * time.Second, HoldWarning: time.Second}

// holdScenario is a checkout of a manual capture whose payment keeps the
// hold it authorized until a move ends it: the merchant's, asked for as the
// hold service asks for it, or else the deadline's. It records the
// payment's history, <name>.json, and the move's, <name>-<kind>.json.
type holdScenario struct {
	name   string
	opts   activitiestest.Options
	timing workflows.Timing
	// move is the merchant's move, asked for once the payment holds the
	// hold; empty leaves the hold to its deadline.
	move chargeonce.MoveKind
	// before acts at the provider once the hold is authorized, before the
	// merchant's move is sent.
	before func(ctx context.Context, env *activitiestest.Env) error
	// during acts once the update of the merchant's move has answered.
	during func(ctx context.Context, env *activitiestest.Env, m chargeonce.MoveIntent) error
	want   chargeonce.HoldStatus
}

func holdScenarios() []holdScenario {
	withHold := func(window time.Duration, breaker provider.BreakerConfig) activitiestest.Options {
		return activitiestest.Options{Fake: fakeprovider.Config{HoldWindow: window}, Breaker: breaker}
	}
	found := shortUnknown
	found.MinAge, found.Interval, found.AbandonAfter = 3*time.Second, time.Second, 10*time.Second
	found.HoldMargin, found.HoldWarning = holdTiming.HoldMargin, holdTiming.HoldWarning
	return []holdScenario{
		{name: "hold-deadline-voided", opts: withHold(shortHold, provider.BreakerConfig{}), timing: holdTiming, want: chargeonce.HoldVoided},
		{name: "hold-captured", opts: withHold(longHold, provider.BreakerConfig{}), timing: holdTiming, move: chargeonce.MoveCapture, want: chargeonce.HoldCaptured},
		{
			name: "hold-capture-unknown-found", opts: withHold(longHold, provider.BreakerConfig{ConsecutiveFailures: 1000}), timing: found,
			move: chargeonce.MoveCapture,
			before: func(_ context.Context, env *activitiestest.Env) error {
				return env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop})
			},
			// The provider lost every request of the capture; it captured
			// the hold on one whose answer was lost, which only a lookup
			// of the hold then tells.
			during: func(ctx context.Context, env *activitiestest.Env, m chargeonce.MoveIntent) error {
				return env.CaptureBehindTheBack(ctx, m)
			},
			want: chargeonce.HoldCaptured,
		},
	}
}

// run checks an order out with a manual capture, makes the merchant's move
// once the payment holds the hold, and waits for the hold to end as the
// scenario wants and for the workflow of the move that ended it.
func (sc holdScenario) run(ctx context.Context, c client.Client, env *activitiestest.Env, taskQueue string) ([]recording, error) {
	intent, err := env.CreateHeldIntent(ctx, "tok_visa", amount, time.Now(), "")
	if err != nil {
		return nil, err
	}
	payment, err := startPayment(ctx, c, taskQueue, intent, sc.timing)
	if err != nil {
		return nil, err
	}
	if sc.move != "" {
		if err := waitPhase(ctx, c, payment.GetID(), "the hold", func(phase string) bool { return phase == workflows.PhaseHolding }); err != nil {
			return nil, err
		}
		if sc.before != nil {
			if err := sc.before(ctx, env); err != nil {
				return nil, err
			}
		}
		m, err := merchantMove(ctx, c, env, taskQueue, intent.OrderID, sc.move, sc.timing)
		if err != nil {
			return nil, err
		}
		if sc.during != nil {
			if err := sc.during(ctx, env, m); err != nil {
				return nil, err
			}
		}
	}
	res, err := paymentResult(ctx, payment, chargeonce.AttemptSucceeded)
	if err != nil {
		return nil, err
	}
	if res.Hold == nil || res.Hold.Status != sc.want {
		return nil, fmt.Errorf("payment's hold ended %+v, want %s", res.Hold, sc.want)
	}
	moves, err := env.Store.OrderMoves(ctx, intent.OrderID)
	if err != nil {
		return nil, err
	}
	if len(moves) != 1 {
		return nil, fmt.Errorf("the hold has %d moves, want 1", len(moves))
	}
	move := c.GetWorkflow(ctx, workflows.MoveWorkflowID(moves[0].Key), "")
	var mr workflows.MoveResult
	if err := move.Get(ctx, &mr); err != nil {
		return nil, err
	}
	if mr.Status != chargeonce.MoveSucceeded {
		return nil, fmt.Errorf("%s ended %s (%s), want %s", moves[0].Kind, mr.Status, mr.Message, chargeonce.MoveSucceeded)
	}
	return []recording{{file: sc.name, run: payment}, {file: sc.name + "-" + string(moves[0].Kind), run: move}}, nil
}

// merchantMove stores the merchant's move of the order's hold (all of it,
// for a capture) and starts its workflow, as hold.Service.Move does, and
// returns the move once the update has answered.
func merchantMove(ctx context.Context, c client.Client, env *activitiestest.Env, taskQueue string, orderID int64, kind chargeonce.MoveKind, timing workflows.Timing) (chargeonce.MoveIntent, error) {
	req := hold.Request{Kind: kind, OrderID: orderID, RequestKey: uuid.NewString()}
	m, decision, err := env.Store.StartMove(ctx, store.NewMove{
		OrderID: orderID, Kind: kind, Origin: chargeonce.MoveByMerchant,
		Key: uuid.Must(uuid.NewV7()).String(), ReferencePrefix: activitiestest.ReferencePrefix,
		RequestKey: req.RequestKey, RequestFingerprint: req.Fingerprint(), Now: time.Now(),
	})
	if err != nil {
		return chargeonce.MoveIntent{}, err
	}
	if decision != store.MoveCreated {
		return chargeonce.MoveIntent{}, fmt.Errorf("merchant's %s: %s, want %s", kind, decision, store.MoveCreated)
	}
	start := c.NewWithStartWorkflowOperation(onQueue(checkout.StartOptions(workflows.MoveWorkflowID(m.Key), workflows.MoveStartSearchAttributes(m.MoveIntent)), taskQueue), workflows.MoveWorkflow(kind), workflows.MoveInput{Intent: m.MoveIntent, Timing: timing})
	var answered workflows.MoveResult
	if _, err := updateWithStart(ctx, c, start, client.UpdateWorkflowOptions{
		UpdateName: chargeonce.UpdateMove,
		Args:       []any{workflows.MoveUpdate{Key: m.Key}},
	}, &answered); err != nil {
		return chargeonce.MoveIntent{}, err
	}
	return m.MoveIntent, nil
}
