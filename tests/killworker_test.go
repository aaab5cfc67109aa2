package tests

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/dev/temporalserver"
	"chargeonce/fakeprovider"
	"chargeonce/internal/codec"
	"chargeonce/store"
	"chargeonce/workflows"
)

// TestPaymentWorkflow_AWorkerKilledDuringTheChargeChargesOnce kills the
// worker process with SIGKILL while its charge request is at the provider.
// The charge runs as a local activity inside the workflow task, so nothing
// of that request reaches the history: the task times out, and the next
// worker runs it again and sends the same request under the same key. The
// request log alone remembers the lost request, listed before it was sent
// and never answered.
//
// Two runs share one stack. In the first, the provider, which finished the
// first request, answers the second from its idempotency store: one
// charge, the order paid with it, and a history that replays. In the
// second, the provider then refuses every request before processing it, as
// a provider in trouble answers 503: no request the workflow saw processed
// anything, yet the lost one charged the card, so the outcome is unknown,
// not nothing charged, and the lookup by reference finds the charge.
func TestPaymentWorkflow_AWorkerKilledDuringTheChargeChargesOnce(t *testing.T) {
	bin := buildBinary(t, "chargeonce/cmd/worker")
	keys, err := codec.NewKeyringText()
	require.NoError(t, err)
	cardHashKey := chargeonce.NewCardHashKey()
	arrived := make(chan struct{}, 1)
	st, err := stack.Start(t.Context(), stack.Config{
		DataDir:     t.TempDir(),
		Host:        "127.0.0.1",
		UIPort:      -1,
		CodecKeys:   keys,
		CardHashKey: cardHashKey,
		// Long enough to outlast the dead worker's workflow task, the send
		// budget and the first lookup, so that the checkout itself gets
		// the outcome.
		CheckoutBudget:  time.Minute,
		ExternalWorkers: true,
		Provider: fakeprovider.Config{After: func(d time.Duration) <-chan time.Time {
			select {
			case arrived <- struct{}{}:
			default:
			}
			return time.After(d)
		}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = st.Close(ctx)
	})
	startWorker := func(name string) *exec.Cmd {
		log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
		require.NoError(t, err)
		cmd := exec.Command(bin,
			"--temporal-address", st.TemporalAddress(),
			"--temporal-namespace", temporalserver.DefaultNamespace,
			"--database-url", st.DatabaseURL(),
			"--codec-keys", keys,
			"--codec-token", codec.NewToken(),
			"--card-hash-key", cardHashKey,
			"--provider-url", st.ProviderURL(),
			// An unknown outcome is looked up as soon as the send budget
			// has ended.
			"--reconcile-min-age", "1s",
			"--reconcile-interval", "1s",
			"--listen", "127.0.0.1:0")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		cmd.Stdout, cmd.Stderr = log, log
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				out, _ := os.ReadFile(log.Name())
				t.Logf("%s's log:\n%s", name, out)
			}
		})
		return cmd
	}
	worker := startWorker("first worker")
	require.Eventually(t, func() bool {
		_, err := checkout.ReadTiming(t.Context(), st.Store())
		return err == nil
	}, time.Minute, 50*time.Millisecond, "the worker publishes its timing")
	dc := codec.NewDataConverter(mustKeyring(t, keys))

	// killDuringCharge checks an order out, kills the worker while the
	// charge request is at the provider, sets the provider to after, starts
	// the next worker and returns the checkout's answer, the attempt, the
	// provider's charges for it and the workflow's history.
	killDuringCharge := func(t *testing.T, next string, after fakeprovider.Mode) (checkout.Result, store.Attempt, []fakeprovider.Charge, *historypb.History) {
		// The provider takes two seconds, within the default three-second
		// request timeout: the request is in flight when the worker dies,
		// and its charge is made after.
		require.NoError(t, st.Provider().SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * time.Second}))
		select {
		case <-arrived:
		default:
		}
		order, err := st.Store().CreateOrder(t.Context(), chargeonce.Money{Minor: 54890, Currency: "TRY"}, "killed worker")
		require.NoError(t, err)
		type answer struct {
			res checkout.Result
			err error
		}
		answered := make(chan answer, 1)
		go func() {
			res, err := st.Checkout().Checkout(t.Context(), order.ID, "tok_visa")
			answered <- answer{res, err}
		}()
		select {
		case <-arrived:
		case <-time.After(time.Minute):
			t.Fatal("no charge request reached the provider")
		}
		require.NoError(t, worker.Process.Kill())
		_ = worker.Wait()
		require.NoError(t, st.Provider().SetMode(after))
		worker = startWorker(next)

		var a answer
		select {
		case a = <-answered:
		case <-time.After(2 * time.Minute):
			t.Fatal("the checkout did not answer")
		}
		require.NoError(t, a.err)
		var charges []fakeprovider.Charge
		for _, c := range st.Provider().Charges() {
			if c.MerchantReference == a.res.Attempt.MerchantReference {
				charges = append(charges, c)
			}
		}
		// The workflow settles the attempt before it completes: once it has
		// completed, the order is what it left.
		require.Eventually(t, func() bool {
			d, err := st.Client().DescribeWorkflowExecution(t.Context(), workflows.WorkflowID(a.res.Attempt.Key), "")
			return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, time.Minute, 100*time.Millisecond, "the payment workflow completes")
		stored, attempts, err := st.Store().GetOrder(t.Context(), order.ID)
		require.NoError(t, err)
		require.Len(t, attempts, 1)
		history := &historypb.History{}
		iter := st.Client().GetWorkflowHistory(t.Context(), workflows.WorkflowID(a.res.Attempt.Key), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		timedOut := 0
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			history.Events = append(history.Events, ev)
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT {
				timedOut++
			}
		}
		require.Equal(t, 1, timedOut, "the dead worker's workflow task timed out, and the next worker ran it")
		require.Len(t, charges, 1, "one charge for the attempt")
		require.Equal(t, chargeonce.OrderPaid, stored.Status)
		require.Equal(t, charges[0].ID, stored.ProviderPaymentID)
		require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
		require.Equal(t, charges[0].ID, attempts[0].ProviderPaymentID)
		require.Equal(t, chargeonce.RequestUnanswered, attempts[0].Requests[0].Outcome, "the dead worker's request is listed, unanswered")
		replayer, err := workflows.NewReplayer(sdkworker.WorkflowReplayerOptions{DataConverter: dc})
		require.NoError(t, err)
		err = replayer.ReplayWorkflowHistory(tlog.NewStructuredLogger(slog.New(slog.DiscardHandler)), history)
		require.NoError(t, err, "the history replays")
		return a.res, attempts[0], charges, history
	}

	t.Run("the request sent again is replayed", func(t *testing.T) {
		res, attempt, charges, history := killDuringCharge(t, "second worker", fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * time.Second})

		require.Equal(t, checkout.OutcomePaid, res.Outcome)
		require.Equal(t, charges[0].ID, res.Attempt.ProviderPaymentID)
		var requests []fakeprovider.RequestRecord
		for _, r := range st.Provider().ChargeRequests() {
			if r.Key == attempt.Key {
				requests = append(requests, r)
			}
		}
		require.GreaterOrEqual(t, len(requests), 2, "the request was sent again after the worker died")
		for _, r := range requests {
			require.Equal(t, requests[0].Fingerprint, r.Fingerprint, "every request under the key has the same body")
		}
		last := attempt.Requests[len(attempt.Requests)-1]
		require.True(t, last.Replayed, "the request sent again is answered with the first one's result")
		// Each request that came back is in the history, as the Web UI
		// shows it: a local activity marker of Charge with its answer.
		answers := chargeMarkers(t, dc, history)
		require.Len(t, answers, len(attempt.Requests)-1, "one marker for each request in the attempt's log but the lost one")
		require.Equal(t, activities.ChargeResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: charges[0].ID, Replayed: true, Recorded: true}, answers[len(answers)-1])
	})

	t.Run("requests refused after the lost one leave the outcome unknown", func(t *testing.T) {
		res, attempt, charges, _ := killDuringCharge(t, "third worker", fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1})

		require.Equal(t, checkout.OutcomePending, res.Outcome, "the lost request may have charged the card, so nothing charged cannot be said")
		require.Equal(t, charges[0].ID, attempt.ProviderPaymentID, "the lookup by reference found the lost request's charge")
		require.Greater(t, len(attempt.Requests), 1)
		for _, r := range attempt.Requests[1:] {
			require.Equal(t, 503, r.StatusCode, "every request the workflow saw was refused")
		}
	})
}

// chargeMarkers are the answers of the Charge local activities in history.
func chargeMarkers(t *testing.T, dc converter.DataConverter, history *historypb.History) []activities.ChargeResult {
	t.Helper()
	var answers []activities.ChargeResult
	for _, ev := range history.Events {
		m := ev.GetMarkerRecordedEventAttributes()
		if m.GetMarkerName() != "LocalActivity" {
			continue
		}
		var data struct{ ActivityType string }
		require.NoError(t, dc.FromPayloads(m.GetDetails()["data"], &data))
		if data.ActivityType != "Charge" {
			continue
		}
		var res activities.ChargeResult
		require.NoError(t, dc.FromPayloads(m.GetDetails()["result"], &res))
		answers = append(answers, res)
	}
	return answers
}

// mustKeyring parses the payload keys of text.
func mustKeyring(t *testing.T, text string) *codec.Keyring {
	t.Helper()
	keyring, err := codec.ParseKeyring(text)
	require.NoError(t, err)
	return keyring
}
