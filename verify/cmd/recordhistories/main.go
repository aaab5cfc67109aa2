// Command recordhistories records the histories that the replay tests of the
// payment, refund, capture and void workflows run over. It starts an
// in-process Temporal server, runs each scenario against the fake provider
// with short timings, and writes every history as JSON to workflows/testdata,
// plus one deliberately broken history that replay must refuse.
//
// Run it from the repository root after a change that is meant to alter the
// workflow's commands (behind workflow.GetVersion), and check in the result:
//
//	go run ./verify/cmd/recordhistories
//
// It records every scenario each time. To add a scenario alone, record into
// another directory with -out and copy in only the new files, so that the
// histories of older code stay as they were recorded.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/encoding/protojson"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/checkout"
	"chargeonce/fakeprovider"
	"chargeonce/internal/envflag"
	"chargeonce/internal/temporalclient"
	"chargeonce/provider"
	"chargeonce/workflows"
)

var amount = chargeonce.Money{Minor: 54890, Currency: "TRY"}

// failing answers every charge with 503, which processes nothing; its
// breaker never opens, so every retry reaches the provider.
var failing = activitiestest.Options{
	Fake:    fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}},
	Breaker: provider.BreakerConfig{ConsecutiveFailures: 1000},
}

// dropping never answers a charge, so that its outcome is unknown; its
// breaker never opens, so that a customer retry reaches the provider.
var dropping = activitiestest.Options{
	Fake:    fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}},
	Breaker: provider.BreakerConfig{ConsecutiveFailures: 1000},
}

// breaking answers every charge with 503 behind a breaker that the first one
// opens: every later request is held back.
var breaking = activitiestest.Options{
	Fake:    fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}},
	Breaker: provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour},
}

// shortUnknown makes the charge phase give up within a second.
var shortUnknown = workflows.Timing{
	AttemptTimeout: 200 * time.Millisecond,
	SendBudget:     time.Second,
	RetryInterval:  200 * time.Millisecond,
}

// threeRequests sends at 0s, 1s and 2s, and then no more, since a fourth
// would not end within the 3s budget. Its wait is a whole second because
// the test server fires shorter timers late, past the budget.
var threeRequests = workflows.Timing{
	AttemptTimeout: 200 * time.Millisecond,
	SendBudget:     3 * time.Second,
	RetryInterval:  time.Second,
}

type scenario struct {
	name  string
	token string
	// swept starts the workflow without the card token, as the outbox sweep
	// does.
	swept  bool
	opts   activitiestest.Options
	timing workflows.Timing
	// during acts on the running payment, as a customer or the provider would.
	during func(ctx context.Context, c client.Client, env *activitiestest.Env, intent chargeonce.PaymentIntent) error
	want   chargeonce.AttemptStatus
}

func scenarios() []scenario {
	reconciled := shortUnknown
	reconciled.MinAge, reconciled.Interval, reconciled.AbandonAfter = 3*time.Second, time.Second, 10*time.Second
	abandoned := workflows.Timing{
		AttemptTimeout: 300 * time.Millisecond, SendBudget: time.Second, RetryInterval: 200 * time.Millisecond,
		MinAge: 2 * time.Second, Interval: time.Second, AbandonAfter: 4 * time.Second,
	}
	retried := shortUnknown
	retried.MinAge, retried.Interval, retried.AbandonAfter = 20*time.Second, 10*time.Second, time.Minute
	return []scenario{
		{name: "approved", token: "tok_visa", want: chargeonce.AttemptSucceeded},
		{name: "declined", token: "tok_chargeDeclined", want: chargeonce.AttemptDeclined},
		{
			name: "slow-409-replay", token: "tok_visa", opts: activitiestest.SlowProvider(),
			timing: workflows.Timing{AttemptTimeout: 500 * time.Millisecond, RetryInterval: 200 * time.Millisecond},
			want:   chargeonce.AttemptSucceeded,
		},
		{
			name: "unknown-reconciled", token: "tok_visa", opts: dropping, timing: reconciled,
			during: func(ctx context.Context, c client.Client, env *activitiestest.Env, intent chargeonce.PaymentIntent) error {
				if err := waitReconciling(ctx, c, intent.Key); err != nil {
					return err
				}
				return env.ChargeBehindTheBack(ctx, intent)
			},
			want: chargeonce.AttemptSucceeded,
		},
		{
			name: "drop-abandoned", token: "tok_visa", timing: abandoned,
			opts: activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}}},
			want: chargeonce.AttemptAbandoned,
		},
		{
			name: "customer-retry", token: "tok_visa", opts: dropping, timing: retried,
			during: func(ctx context.Context, c client.Client, env *activitiestest.Env, intent chargeonce.PaymentIntent) error {
				if err := waitReconciling(ctx, c, intent.Key); err != nil {
					return err
				}
				if err := env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}); err != nil {
					return err
				}
				h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
					WorkflowID:   workflows.WorkflowID(intent.Key),
					UpdateName:   chargeonce.UpdateCharge,
					Args:         []any{workflows.ChargeRequest{CardToken: intent.CardToken, CardHash: intent.CardHash}},
					WaitForStage: client.WorkflowUpdateStageCompleted,
				})
				if err != nil {
					return err
				}
				var res workflows.PaymentResult
				if err := h.Get(ctx, &res); err != nil {
					return err
				}
				if res.Status != chargeonce.AttemptSucceeded {
					return fmt.Errorf("customer retry: got %s, want %s", res.Status, chargeonce.AttemptSucceeded)
				}
				return nil
			},
			want: chargeonce.AttemptSucceeded,
		},
		{name: "provider-errors-not-processed", token: "tok_visa", opts: failing, timing: threeRequests, want: chargeonce.AttemptNotProcessed},
		{name: "breaker-not-processed", token: "tok_visa", opts: breaking, timing: threeRequests, want: chargeonce.AttemptNotProcessed},
		{name: "no-token-not-processed", token: "tok_visa", swept: true, want: chargeonce.AttemptNotProcessed},
	}
}

func main() {
	out := flag.String("out", filepath.Join("workflows", "testdata"), "directory the histories are written to")
	envflag.SetUsage(flag.CommandLine, "")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := record(ctx, *out, logger); err != nil {
		logger.Error("recording histories failed", "error", err)
		os.Exit(1)
	}
}

func record(ctx context.Context, out string, logger *slog.Logger) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sdkLogger := tlog.NewStructuredLogger(logger.With("component", "temporal-sdk"))
	ts := temporaltest.NewServer(
		temporaltest.WithBaseClientOptions(client.Options{Logger: sdkLogger}),
		temporaltest.WithBaseWorkerOptions(worker.Options{}),
	)
	defer ts.Stop()
	c := ts.GetDefaultClient()
	if err := temporalclient.AddSearchAttributes(ctx, c, ts.GetDefaultNamespace(), workflows.SearchAttributes()); err != nil {
		return err
	}
	for _, sc := range scenarios() {
		logger.Info("recording", "scenario", sc.name)
		if err := runScenario(ctx, ts, c, sc.name, sc.opts, out, sc.run); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
	}
	for _, sc := range refundScenarios() {
		logger.Info("recording", "scenario", sc.name)
		if err := runScenario(ctx, ts, c, sc.name, sc.opts, out, sc.run); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
	}
	for _, sc := range holdScenarios() {
		logger.Info("recording", "scenario", sc.name)
		if err := runScenario(ctx, ts, c, sc.name, sc.opts, out, sc.run); err != nil {
			return fmt.Errorf("scenario %s: %w", sc.name, err)
		}
	}
	return breakHistory(filepath.Join(out, "approved.json"), filepath.Join(out, "broken-activity-type.json"))
}

// recording is a run whose history a scenario records, in <file>.json.
type recording struct {
	file string
	run  client.WorkflowRun
}

// runScenario runs one scenario with its own fake provider and store:
// start starts its workflows and waits for them to end as the scenario
// wants, and the history of each run it returns is written to out.
func runScenario(ctx context.Context, ts *temporaltest.TestServer, c client.Client, name string, opts activitiestest.Options, out string,
	start func(ctx context.Context, c client.Client, env *activitiestest.Env, taskQueue string) ([]recording, error)) (err error) {
	dir, err := os.MkdirTemp("", "recordhistories-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	env, err := activitiestest.Start(ctx, opts, dir)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = errors.Join(err, env.Close(closeCtx))
	}()
	// One task queue per scenario, so that each runs on its own fake
	// provider. The lookup queue's name follows from the intent's provider,
	// the default one here, whose queue is chargeonce.LookupTaskQueue; the
	// scenarios run one after another, each with its own lookup worker.
	taskQueue := chargeonce.TaskQueue + "-" + name
	// As a worker's, the moves' records tell the payment of its hold.
	env.Activities.Temporal = c
	w := ts.NewWorker(taskQueue, func(r worker.Registry) { workflows.Register(r, env.Activities) })
	defer w.Stop()
	lw := ts.NewWorker(chargeonce.LookupTaskQueue, func(r worker.Registry) { workflows.RegisterLookups(r, env.Activities) })
	defer lw.Stop()

	recs, err := start(ctx, c, env, taskQueue)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		history, err := fetchHistory(ctx, c, rec.run.GetID(), rec.run.GetRunID())
		if err != nil {
			return err
		}
		if err := writeHistory(filepath.Join(out, rec.file+".json"), history); err != nil {
			return err
		}
	}
	return nil
}

// run starts the payment and waits for the outcome the scenario wants.
func (sc scenario) run(ctx context.Context, c client.Client, env *activitiestest.Env, taskQueue string) ([]recording, error) {
	intent, err := env.CreateIntent(ctx, sc.token, amount, time.Now())
	if err != nil {
		return nil, err
	}
	if sc.swept {
		intent.CardToken = ""
	}
	run, err := startPayment(ctx, c, taskQueue, intent, sc.timing)
	if err != nil {
		return nil, err
	}
	if sc.during != nil {
		if err := sc.during(ctx, c, env, intent); err != nil {
			return nil, err
		}
	}
	if _, err := paymentResult(ctx, run, sc.want); err != nil {
		return nil, err
	}
	return []recording{{file: sc.name, run: run}}, nil
}

// startPayment starts the payment of intent as the checkout starts it, so
// that the histories cover the production path.
func startPayment(ctx context.Context, c client.Client, taskQueue string, intent chargeonce.PaymentIntent, timing workflows.Timing) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, onQueue(checkout.StartOptions(workflows.WorkflowID(intent.Key), workflows.StartSearchAttributes(intent)), taskQueue),
		workflows.PaymentWorkflow, workflows.PaymentInput{Intent: intent, Timing: timing})
}

// onQueue is the start options o on the scenario's own task queue.
func onQueue(o client.StartWorkflowOptions, taskQueue string) client.StartWorkflowOptions {
	o.TaskQueue = taskQueue
	return o
}

// paymentResult waits for the payment to end, and returns its result if
// its attempt ended as want.
func paymentResult(ctx context.Context, run client.WorkflowRun, want chargeonce.AttemptStatus) (workflows.PaymentResult, error) {
	var res workflows.PaymentResult
	if err := run.Get(ctx, &res); err != nil {
		return res, err
	}
	if res.Status != want {
		return res, fmt.Errorf("payment ended %s (%s), want %s", res.Status, res.Message, want)
	}
	return res, nil
}

// updateWithStart starts a money movement's workflow as the API does,
// with Update-With-Start, waits for the update's answer into answer, and
// returns the run.
func updateWithStart(ctx context.Context, c client.Client, start client.WithStartWorkflowOperation, update client.UpdateWorkflowOptions, answer any) (client.WorkflowRun, error) {
	update.WaitForStage = client.WorkflowUpdateStageCompleted
	handle, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{StartWorkflowOperation: start, UpdateOptions: update})
	if err != nil {
		return nil, err
	}
	if err := handle.Get(ctx, answer); err != nil {
		return nil, err
	}
	return c.GetWorkflow(ctx, handle.WorkflowID(), handle.RunID()), nil
}

// waitReconciling waits until the payment has given up its charge phase.
func waitReconciling(ctx context.Context, c client.Client, workflowID string) error {
	return waitPhase(ctx, c, workflowID, "reconciliation", func(phase string) bool { return phase != workflows.PhaseCharging })
}

// waitPhase waits until the status query of the workflow shows a phase
// that reached says is what, named in the error, was waited for.
func waitPhase(ctx context.Context, c client.Client, workflowID, what string, reached func(phase string) bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		val, err := c.QueryWorkflow(ctx, workflowID, "", chargeonce.QueryStatus)
		if err != nil {
			return err
		}
		var st workflows.Status
		if err := val.Get(&st); err != nil {
			return err
		}
		if reached(st.Phase) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

func fetchHistory(ctx context.Context, c client.Client, workflowID, runID string) (*historypb.History, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	history := &historypb.History{}
	for it.HasNext() {
		event, err := it.Next()
		if err != nil {
			return nil, err
		}
		history.Events = append(history.Events, event)
	}
	return history, nil
}

// writeHistory writes the history in the JSON form the replayer reads,
// indented by encoding/json rather than protojson, whose whitespace is
// deliberately unstable: regenerated files then differ only where the
// histories do.
func writeHistory(path string, history *historypb.History) error {
	b, err := protojson.Marshal(history)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// breakHistory writes a copy of a good history in which the first charge
// request, a Charge local activity, was FindCharge instead: a history that
// the workflow code can never have produced.
func breakHistory(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	history := &historypb.History{}
	if err := protojson.Unmarshal(b, history); err != nil {
		return err
	}
	charge, find := []byte(`"ActivityType":"Charge"`), []byte(`"ActivityType":"FindCharge"`)
	for _, event := range history.Events {
		attrs := event.GetMarkerRecordedEventAttributes()
		if attrs == nil {
			continue
		}
		for _, p := range attrs.GetDetails()["data"].GetPayloads() {
			if bytes.Contains(p.Data, charge) {
				p.Data = bytes.Replace(p.Data, charge, find, 1)
				return writeHistory(to, history)
			}
		}
	}
	return fmt.Errorf("%s records no Charge local activity", from)
}
