package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/fakeprovider"
	"chargeonce/internal/logging"
	"chargeonce/internal/openapitest"
	"chargeonce/internal/syncbuf"
	"chargeonce/notify"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/store"
	"chargeonce/workflows"
)

// articleTiming is the timing of the reference article (3s per request, 10s
// for the charge phase, 1s between requests) at half scale. Half is as far as
// it scales: the provider's Retry-After on a 409 is a whole second.
func articleTiming() workflows.Timing {
	return workflows.Timing{
		AttemptTimeout: 1500 * time.Millisecond,
		SendBudget:     5 * time.Second,
		RetryInterval:  500 * time.Millisecond,
		// Reconciliation stays out of the way: these runs are settled by
		// the charge phase or by the customer's retry.
		MinAge:       2 * time.Minute,
		Interval:     time.Minute,
		AbandonAfter: 30 * time.Minute,
	}.WithDefaults()
}

// articleBudget is the checkout's wait, a bit over the charge budget, as in
// the default configuration (12s over 10s), at the same half scale.
const articleBudget = 6 * time.Second

func TestCheckout_SlowProviderIsChargedOnceAcrossThreeRequests(t *testing.T) {
	// The article: the provider takes 5s, a request times out after 3s. The
	// first request times out, the retry a second later finds it in flight
	// (409), the next gets the stored 201 replayed.
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(),
		Budget: articleBudget,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2500 * time.Millisecond},
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(res.body, &paid))
	require.Equal(t, paidBody{OrderID: id, Status: "paid", Total: "548.90", Currency: "TRY",
		ProviderPaymentID: paid.ProviderPaymentID, IdempotencyKey: paid.IdempotencyKey}, paid)
	require.True(t, chargeonce.ValidKey(paid.IdempotencyKey))

	charges := s.provider.Charges()
	require.Len(t, charges, 1, "one charge at the provider")
	require.Equal(t, paid.ProviderPaymentID, charges[0].ID)
	require.Equal(t, int64(54890), charges[0].Amount)

	posts := s.provider.ChargeRequests()
	require.Len(t, posts, 3, "three requests: timeout, 409, replayed 201")
	for _, r := range posts {
		require.Equal(t, paid.IdempotencyKey, r.Key, "every request carries the one key")
	}
	require.Equal(t, []int{0, http.StatusConflict, http.StatusCreated}, statuses(posts))
	require.True(t, posts[2].Replayed)

	o := s.order(t, id)
	require.Equal(t, "paid", o.Status)
	require.Len(t, o.Attempts, 1)
	log := o.Attempts[0].Requests
	require.Len(t, log, 3, "the merchant's request log agrees with the provider's")
	require.Nil(t, log[0].Status, "no response to the first request")
	require.Equal(t, "timeout", log[0].Outcome)
	require.Equal(t, http.StatusConflict, *log[1].Status)
	require.Equal(t, http.StatusCreated, *log[2].Status)
	require.True(t, log[2].Replayed)
}

func TestCheckout_UnknownOutcomeIs202ThenConflictThenTheSameKeyIsReplayed(t *testing.T) {
	// The article: the provider takes 15s, longer than the whole 10s budget.
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(),
		Budget: articleBudget,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 7500 * time.Millisecond},
		Logs:   logs,
	})
	id := s.createOrder(t, "548.90", "TRY")

	pending := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, pending.status, "body: %s", pending.body)
	require.Equal(t, fmt.Sprintf("/api/orders/%d", id), pending.header.Get("Location"))
	var p paidBody
	require.NoError(t, json.Unmarshal(pending.body, &p))
	require.Equal(t, "payment_pending", p.Status)
	require.Empty(t, p.ProviderPaymentID)
	key := p.IdempotencyKey

	other := s.checkout(t, id, "tok_mastercard")
	require.Equal(t, http.StatusConflict, other.status, "body: %s", other.body)
	require.Equal(t, "application/problem+json", other.header.Get("Content-Type"))
	require.Equal(t, "A previous payment for this order is still being verified.", problemOf(t, other).Title)

	o := s.order(t, id)
	require.Equal(t, "payment_pending", o.Status)
	require.Len(t, o.Attempts, 1, "the other card started no attempt")
	require.Equal(t, key, o.Attempts[0].IdempotencyKey)
	require.Equal(t, "open", o.Attempts[0].Status)

	// "Later": once the provider has finished the first request.
	require.Eventually(t, func() bool { return len(s.provider.Charges()) == 1 }, 15*time.Second, 50*time.Millisecond)

	again := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, again.status, "body: %s", again.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(again.body, &paid))
	require.Equal(t, key, paid.IdempotencyKey, "the retry sent the stored key")
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, charges[0].ID, paid.ProviderPaymentID)

	posts := s.provider.ChargeRequests()
	require.True(t, posts[len(posts)-1].Replayed, "the retry got the stored charge replayed")
	for _, r := range posts {
		require.Equal(t, key, r.Key)
	}

	story := logs.String()
	require.Contains(t, story, "payment outcome unknown")
	require.Contains(t, story, "resending payment with the stored key")
	require.Less(t, strings.Index(story, "payment outcome unknown"), strings.Index(story, "resending payment with the stored key"))
}

func TestCheckout_TwentyPercentProviderErrorsNeverChargeAnOrderTwice(t *testing.T) {
	timing := workflows.Timing{
		AttemptTimeout: time.Second,
		SendBudget:     5 * time.Second,
		RetryInterval:  100 * time.Millisecond,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   30 * time.Minute,
	}
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: timing,
		Budget: 6 * time.Second,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 0.2, Seed: 20},
	})

	const orders, concurrency = 100, 8
	ids := make([]int64, orders)
	for i := range ids {
		ids[i] = s.createOrder(t, strconv.Itoa(10+i)+".00", "TRY")
	}
	codes := make([]int, orders)
	keys := make([]string, orders)
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrency)
	for i, id := range ids {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			res := s.checkoutNoFatal(id, "tok_visa")
			codes[i] = res.status
			var b paidBody
			if json.Unmarshal(res.body, &b) == nil {
				keys[i] = b.IdempotencyKey
			}
		}()
	}
	wg.Wait()

	byCode := map[int]int{}
	for _, c := range codes {
		byCode[c]++
	}
	t.Logf("responses by status: %v; charge requests: %d; charges at the provider: %d",
		byCode, len(s.provider.ChargeRequests()), len(s.provider.Charges()))
	// A run of failures can open the worker's breaker, and a checkout whose
	// every request it held back or got a 503 processed nothing.
	require.Equal(t, orders, byCode[http.StatusOK]+byCode[http.StatusAccepted]+byCode[http.StatusServiceUnavailable],
		"every checkout is paid, pending or not processed: %v", byCode)

	// Every paid answer has exactly one charge behind it, and no order has two.
	chargesByOrder := map[int64]int{}
	for _, c := range s.provider.Charges() {
		require.Equal(t, "succeeded", string(c.Status))
		_, orderID, key, err := chargeonce.ParseMerchantReference(c.MerchantReference)
		require.NoError(t, err)
		require.Equal(t, key, c.IdempotencyKey)
		chargesByOrder[orderID]++
	}
	require.Len(t, s.provider.Charges(), byCode[http.StatusOK], "successful responses equal charges at the provider")
	for i, id := range ids {
		switch codes[i] {
		case http.StatusOK:
			require.Equal(t, 1, chargesByOrder[id], "order %d", id)
		case http.StatusServiceUnavailable:
			require.Zero(t, chargesByOrder[id], "order %d was not processed", id)
		}
		require.LessOrEqual(t, chargesByOrder[id], 1, "order %d charged twice", id)
	}

	// One key per order on the wire. A 503 names no key: the order's one
	// attempt has it.
	keysByOrder := map[int64]map[string]bool{}
	keyOrder := map[string]int64{}
	for i, id := range ids {
		if codes[i] == http.StatusServiceUnavailable {
			_, attempts, err := s.store.GetOrder(t.Context(), id)
			require.NoError(t, err)
			require.Len(t, attempts, 1)
			require.Equal(t, chargeonce.AttemptNotProcessed, attempts[0].Status)
			keys[i] = attempts[0].Key
		}
		keyOrder[keys[i]] = id
		keysByOrder[id] = map[string]bool{}
	}
	for _, r := range s.provider.ChargeRequests() {
		id, ok := keyOrder[r.Key]
		require.True(t, ok, "request with a key no checkout answered: %q", r.Key)
		keysByOrder[id][r.Key] = true
	}
	for id, k := range keysByOrder {
		require.LessOrEqual(t, len(k), 1, "order %d sent more than one key", id)
	}
}

func TestCheckout_UnknownOutcomeIsSettledByReconciliation(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: workflows.Timing{
			AttemptTimeout: 500 * time.Millisecond,
			SendBudget:     time.Second,
			RetryInterval:  200 * time.Millisecond,
			MinAge:         2500 * time.Millisecond,
			Interval:       500 * time.Millisecond,
			AbandonAfter:   time.Minute,
		},
		Budget: 1500 * time.Millisecond,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * time.Second},
		Logs:   logs,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)

	o := s.waitPaid(t, id)

	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, charges[0].ID, *o.ProviderPaymentID)
	require.Len(t, o.Attempts, 1)
	require.Equal(t, "succeeded", o.Attempts[0].Status)
	require.NotNil(t, o.Attempts[0].LastCheckedAt, "settled by a lookup at the provider")
	for _, r := range s.provider.ChargeRequests() {
		require.Equal(t, o.Attempts[0].IdempotencyKey, r.Key)
	}

	// The workflow's info line passes the filter that holds back the SDK's
	// own info lines, such as the worker's start.
	story := logs.String()
	require.Regexp(t, `level=INFO msg="reconciled order: provider has the charge" .*WorkflowType=PaymentWorkflow .*key=`+o.Attempts[0].IdempotencyKey, story)
	require.NotContains(t, story, "Started Worker")
}

// TestCheckout_LostWorkflowStartIsSettledBySweepAndTheRetryPaysUnderANewKey:
// the sweep starts the workflow of a lost start without the card token. No
// run of the key ever existed, so nothing was sent under it: the attempt is
// settled not_processed at once, and the customer's retry pays under a new
// key.
func TestCheckout_LostWorkflowStartIsSettledBySweepAndTheRetryPaysUnderANewKey(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(),
		Budget: articleBudget,
	})
	ctx := context.Background()
	id := s.createOrder(t, "548.90", "TRY")

	// A checkout whose Temporal is unreachable stores the key, answers
	// pending, and leaves the attempt in the outbox.
	unreachable, err := client.NewLazyClient(client.Options{HostPort: unusedAddress(t)})
	require.NoError(t, err)
	t.Cleanup(unreachable.Close)
	cut, err := checkout.New(checkout.Config{Store: s.store, Temporal: unreachable, CardHasher: s.stack.CardHasher(), Budget: time.Second})
	require.NoError(t, err)
	res, err := cut.Checkout(ctx, id, "tok_visa")
	require.NoError(t, err)
	require.Equal(t, checkout.OutcomePending, res.Outcome)
	key := res.Attempt.Key
	attempt, err := s.store.GetAttempt(ctx, key)
	require.NoError(t, err)
	require.Equal(t, chargeonce.AttemptOpen, attempt.Status)
	require.False(t, attempt.WorkflowStarted)
	require.Empty(t, s.provider.ChargeRequests(), "nothing was sent")

	// A young attempt is left to its checkout; an old one is started.
	started, err := s.service.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, started)
	later, err := checkout.New(checkout.Config{Store: s.store, Temporal: s.temporal, CardHasher: s.stack.CardHasher(), Budget: articleBudget,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	require.NoError(t, err)
	started, err = later.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, started)
	var settled store.Attempt
	require.Eventually(t, func() bool {
		settled, err = s.store.GetAttempt(ctx, key)
		require.NoError(t, err)
		return settled.Status != chargeonce.AttemptOpen
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, chargeonce.AttemptNotProcessed, settled.Status)
	require.True(t, settled.WorkflowStarted)
	require.Nil(t, settled.LastCheckedAt, "a key nothing was sent under is never looked up")
	require.Equal(t, "placed", s.order(t, id).Status)
	run := s.temporal.GetWorkflow(ctx, workflows.WorkflowID(key), "")
	var outcome workflows.PaymentResult
	require.NoError(t, run.Get(ctx, &outcome))
	require.Equal(t, chargeonce.AttemptNotProcessed, outcome.Status)

	started, err = later.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, started, "a started attempt leaves the outbox")
	require.Empty(t, s.provider.ChargeRequests(), "the sweep has no card token, so nothing is sent")

	// The customer's retry opens a new attempt and pays.
	retry := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, retry.status, "body: %s", retry.body)
	var paid paidBody
	require.NoError(t, json.Unmarshal(retry.body, &paid))
	require.NotEqual(t, key, paid.IdempotencyKey)
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, paid.IdempotencyKey, charges[0].IdempotencyKey)
	report := checkInvariants(t, s, s.store, time.Now(), id)
	require.True(t, report.OK(), "%s", report)
}

func TestCheckout_ClosedWorkflowIsNeverRunAgainAndTheAnswerComesFromTheDatabase(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget,
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}})
	ctx := context.Background()
	id := s.createOrder(t, "548.90", "TRY")

	first, err := s.service.Checkout(ctx, id, "tok_visa")
	require.NoError(t, err)
	require.Equal(t, checkout.OutcomePending, first.Outcome)
	key := first.Attempt.Key
	// An operator ends the workflow while the attempt is still open.
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, workflows.WorkflowID(key), "", "operator stopped the payment"))
	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	sent := len(s.provider.ChargeRequests())

	again, err := s.service.Checkout(ctx, id, "tok_visa")
	require.NoError(t, err)
	require.Equal(t, checkout.OutcomePending, again.Outcome, "the attempt is open in the database")
	require.Equal(t, key, again.Attempt.Key)
	require.Len(t, s.provider.ChargeRequests(), sent, "a closed key is never sent again")
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, workflows.WorkflowID(key), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, desc.WorkflowExecutionInfo.Status)
}

func TestCheckout_PaidOrderIsNotChargedAgain(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget})
	ctx := context.Background()
	id := s.createOrder(t, "100.00", "TRY")

	first, err := s.service.Checkout(ctx, id, "tok_visa")
	require.NoError(t, err)
	require.Equal(t, checkout.OutcomePaid, first.Outcome)
	require.False(t, first.AlreadyPaid)

	for _, card := range []string{"tok_visa", "tok_mastercard"} {
		again, err := s.service.Checkout(ctx, id, card)
		require.NoError(t, err)
		require.Equal(t, checkout.OutcomePaid, again.Outcome)
		require.True(t, again.AlreadyPaid)
		require.Equal(t, first.Attempt.Key, again.Attempt.Key)
		require.Equal(t, first.Attempt.ProviderPaymentID, again.Attempt.ProviderPaymentID)
	}
	require.Len(t, s.provider.ChargeRequests(), 1)
	require.Len(t, s.provider.Charges(), 1)
	_, attempts, err := s.store.GetOrder(ctx, id)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
}

// TestCheckout_RefusedCardIs402AndTheOrderIsThenPaidWithAGoodCard: a card
// token the provider refuses as no payment method it can charge is the
// customer's problem, in either dialect: the checkout answers 402, the
// attempt settles declined, nobody is alerted, and the same order is then
// paid with a good card.
func TestCheckout_RefusedCardIs402AndTheOrderIsThenPaidWithAGoodCard(t *testing.T) {
	for _, tc := range []struct {
		api     string
		refused []string
		good    string
	}{
		{api: dialect.IETF, refused: []string{"visa", "tok_"}, good: "tok_visa"},
		{api: dialect.Stripe, refused: []string{"visa", "pm_card_"}, good: "pm_card_visa"},
	} {
		t.Run(tc.api, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, API: tc.api, Logs: logs})
			id := s.createOrder(t, "548.90", "TRY")

			for _, card := range tc.refused {
				res := s.checkout(t, id, card)
				require.Equal(t, http.StatusPaymentRequired, res.status, "body: %s", res.body)
				p := problemOf(t, res)
				require.Equal(t, "urn:chargeonce:problem:card-declined", p.Type)
				require.Equal(t, provider.DeclineInvalidPaymentMethod, p.DeclineCode)
				require.Contains(t, p.Detail, "This card cannot be used")
				require.Equal(t, "placed", s.order(t, id).Status, "the order stays payable")
			}
			paid := s.checkout(t, id, tc.good)
			require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)

			o := s.order(t, id)
			require.Equal(t, "paid", o.Status)
			require.Len(t, o.Attempts, len(tc.refused)+1, "each card is an attempt of its own")
			for _, a := range o.Attempts[:len(tc.refused)] {
				require.Equal(t, "declined", a.Status)
				require.Empty(t, errorLinesOf(logs.String(), a.IdempotencyKey))
			}
			require.Len(t, s.provider.Charges(), 1, "a refused card makes no charge")
			require.NotContains(t, logs.String(), "alert=")
			require.NotRegexp(t, `chargeonce_alerts_total\{alert="\w+"\} [1-9]`, s.metrics(t))
		})
	}
}

// TestCheckout_ClickStormOfOneCardIsJoinedAndEveryClickIsPaid: fifty
// checkouts of one order with one card at once, while the provider loses
// the response to every new charge. The API joins them into one update of
// the payment workflow, so the server's limit on updates in flight per
// workflow is never reached, and every click is answered with the outcome
// the order reached: paid, by one charge.
func TestCheckout_ClickStormOfOneCardIsJoinedAndEveryClickIsPaid(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(),
		Budget: articleBudget,
		Mode:   fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1},
		Logs:   logs,
	})
	id := s.createOrder(t, "548.90", "TRY")
	// What the embedded server logs while it starts is not the storm's.
	logged := len(logs.String())

	const clicks = 50
	answers := make([]checkoutResponse, clicks)
	go1 := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clicks {
		wg.Go(func() {
			<-go1
			answers[i] = s.checkoutNoFatal(id, "tok_visa")
		})
	}
	began := time.Now()
	close(go1)
	wg.Wait()
	t.Logf("%d clicks answered in %v", clicks, time.Since(began))

	for i, a := range answers {
		require.Equal(t, http.StatusOK, a.status, "click %d: %s", i, a.body)
	}
	charges := s.provider.Charges()
	require.Len(t, charges, 1, "one charge for fifty clicks")
	o := s.order(t, id)
	require.Equal(t, "paid", o.Status)
	require.Len(t, o.Attempts, 1)
	require.Equal(t, charges[0].ID, *o.ProviderPaymentID)
	story := logs.String()[logged:]
	require.NotContains(t, story, "concurrent in-flight updates", "no update was refused past the server's limit")
	require.Empty(t, errorLinesOf(story, ""), "a storm is no error")
}

// checkoutStackConfig is what these tests vary in the stack.
type checkoutStackConfig struct {
	Timing workflows.Timing
	Budget time.Duration
	Mode   fakeprovider.Mode
	// LookupRate is the fake provider's; zero means its default.
	LookupRate float64
	// Logs receives the logs of the checkout, worker and API; nil discards.
	Logs io.Writer
	// API is the dialect the worker speaks to the fake provider; empty
	// means the IETF draft's.
	API string
	// ProviderEvents makes the fake provider post its events to the API,
	// with the delivery of Webhooks (schedule, chaos).
	ProviderEvents bool
	Webhooks       fakeprovider.WebhookConfig
	// DataDir keeps Temporal's state on disk, so that it can be
	// restarted; empty runs it in memory.
	DataDir string
	// EventRetries is the merchant events' retry schedule; nil means the
	// default.
	EventRetries []time.Duration
	// Receiver is the dev receiver's address, whose lines go to
	// ReceiverOut; empty runs none.
	Receiver    string
	ReceiverOut io.Writer
	// Backup runs a second fake provider, to which payments move when the
	// first charged nothing (stack.Config.Backup).
	Backup *fakeprovider.Config
}

// checkoutResponse is one answer of the checkout API.
type checkoutResponse struct {
	status int
	header http.Header
	body   []byte
}

// paidBody is the body of a 200 or 202 checkout.
type paidBody struct {
	OrderID           int64  `json:"orderId"`
	Status            string `json:"status"`
	Total             string `json:"total"`
	Currency          string `json:"currency"`
	ProviderPaymentID string `json:"providerPaymentId"`
	IdempotencyKey    string `json:"idempotencyKey"`
}

// orderView is GET /api/orders/{id}.
type orderView struct {
	ID                int64   `json:"id"`
	Status            string  `json:"status"`
	Total             string  `json:"total"`
	Currency          string  `json:"currency"`
	ProviderPaymentID *string `json:"providerPaymentId"`
	Attempts          []struct {
		IdempotencyKey    string     `json:"idempotencyKey"`
		Provider          string     `json:"provider"`
		RoutedBy          *string    `json:"routedBy"`
		Status            string     `json:"status"`
		MerchantReference string     `json:"merchantReference"`
		LastCheckedAt     *time.Time `json:"lastCheckedAt"`
		Requests          []struct {
			At         time.Time `json:"at"`
			Status     *int      `json:"status"`
			Outcome    string    `json:"outcome"`
			Replayed   bool      `json:"replayed"`
			DurationMS int64     `json:"durationMs"`
		} `json:"requests"`
	} `json:"attempts"`
}

// problemView is an RFC 9457 body.
type problemView struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Status      int    `json:"status"`
	Detail      string `json:"detail"`
	DeclineCode string `json:"declineCode"`
}

func problemOf(t *testing.T, r checkoutResponse) problemView {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	var p problemView
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.Equal(t, r.status, p.Status)
	return p
}

// testHTTP is the client of every test request: loopback only, with a
// timeout well over any checkout budget used here. The requests to the
// API go through a stack's api client, which is testHTTP with the
// OpenAPI check.
var testHTTP = &http.Client{Timeout: time.Minute}

// send makes one request to the API, with the stack's API key.
func (s *checkoutStack) send(method, path, body string) (checkoutResponse, error) {
	return s.sendChecked(method, path, body, false)
}

// sendInvalid is send for a request that the OpenAPI document forbids on
// purpose: only its answer is checked against the document.
func (s *checkoutStack) sendInvalid(method, path, body string) (checkoutResponse, error) {
	return s.sendChecked(method, path, body, true)
}

func (s *checkoutStack) sendChecked(method, path, body string, responsesOnly bool) (checkoutResponse, error) {
	req, err := http.NewRequest(method, s.apiURL+path, strings.NewReader(body))
	if err != nil {
		return checkoutResponse{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if responsesOnly {
		openapitest.ResponsesOnly(req)
	}
	resp, err := s.api.Do(req)
	if err != nil {
		return checkoutResponse{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return checkoutResponse{status: resp.StatusCode, header: resp.Header, body: data}, err
}

func (s *checkoutStack) createOrder(t *testing.T, amount, currency string) int64 {
	t.Helper()
	res, err := s.send(http.MethodPost, "/api/orders", fmt.Sprintf(`{"amount": %q, "currency": %q}`, amount, currency))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "body: %s", res.body)
	var o orderView
	require.NoError(t, json.Unmarshal(res.body, &o))
	return o.ID
}

func (s *checkoutStack) checkout(t *testing.T, id int64, card string) checkoutResponse {
	t.Helper()
	res, err := s.send(http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), fmt.Sprintf(`{"card_token": %q}`, card))
	require.NoError(t, err)
	return res
}

// checkoutNoFatal is checkout for goroutines, where require must not be
// called: a failed exchange shows as status 0.
func (s *checkoutStack) checkoutNoFatal(id int64, card string) checkoutResponse {
	res, err := s.send(http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), fmt.Sprintf(`{"card_token": %q}`, card))
	if err != nil {
		return checkoutResponse{}
	}
	return res
}

// metrics scrapes the stack's /metrics.
func (s *checkoutStack) metrics(t *testing.T) string {
	t.Helper()
	res, err := s.send(http.MethodGet, "/metrics", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status)
	return string(res.body)
}

// errorLinesOf returns the error lines of a text log that name key, as the
// idempotency key or as the workflow ID.
func errorLinesOf(logs, key string) []string {
	var lines []string
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, key) {
			lines = append(lines, line)
		}
	}
	return lines
}

// waitPaid waits until reconciliation or a retry has paid the order, and
// returns it.
func (s *checkoutStack) waitPaid(t *testing.T, id int64) orderView {
	t.Helper()
	var o orderView
	require.Eventually(t, func() bool {
		o = s.order(t, id)
		return o.Status == "paid"
	}, 20*time.Second, 100*time.Millisecond)
	return o
}

func (s *checkoutStack) order(t *testing.T, id int64) orderView {
	t.Helper()
	res, err := s.send(http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var o orderView
	require.NoError(t, json.Unmarshal(res.body, &o))
	return o
}

func statuses(records []fakeprovider.RequestRecord) []int {
	out := make([]int, len(records))
	for i, r := range records {
		out[i] = r.Status
	}
	return out
}

// unusedAddress returns a loopback host:port where nothing listens.
func unusedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// checkoutStack is the whole stack, started for one test, with the parts
// these tests reach into.
type checkoutStack struct {
	stack  *stack.Stack
	apiURL string
	// api is testHTTP for requests to the API, with each request and
	// answer checked against docs/openapi.json.
	api *http.Client
	// apiKey holds every scope; send authenticates with it.
	apiKey      string
	providerURL string
	provider    *fakeprovider.Provider
	// backup is the backup provider of checkoutStackConfig.Backup.
	backup   *fakeprovider.Provider
	store    store.Store
	temporal client.Client
	service  *checkout.Service
}

// startCheckoutStack starts the stack (embedded Temporal in memory, fake
// provider, worker, API, SQLite in a temporary directory) on free loopback
// ports, and stops it when the test ends.
func startCheckoutStack(t *testing.T, cfg checkoutStackConfig) *checkoutStack {
	t.Helper()
	logs := cfg.Logs
	if logs == nil {
		logs = io.Discard
	}
	// The processes build their loggers so: at info, the default level.
	logger, err := logging.New(logs, "text", "info")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{
		Host:           "127.0.0.1",
		Timing:         cfg.Timing,
		CheckoutBudget: cfg.Budget,
		Provider:       fakeprovider.Config{Mode: cfg.Mode, LookupRate: cfg.LookupRate, Webhooks: cfg.Webhooks},
		ProviderAPI:    cfg.API,
		ProviderEvents: cfg.ProviderEvents,
		DataDir:        cfg.DataDir,
		EventRetries:   cfg.EventRetries,
		// The tests' receivers listen on loopback.
		EventNetworks: notify.LoopbackNetworks,
		Receiver:      cfg.Receiver,
		ReceiverOut:   cfg.ReceiverOut,
		Backup:        cfg.Backup,
		Logger:        logger,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Close(ctx))
	})
	return &checkoutStack{
		stack:       st,
		apiURL:      st.APIURL(),
		api:         &http.Client{Timeout: testHTTP.Timeout, Transport: openapitest.Transport(t, nil)},
		apiKey:      st.APIKey(),
		providerURL: st.ProviderURL(),
		provider:    st.Provider(),
		backup:      st.Backup(),
		store:       st.Store(),
		temporal:    st.Client(),
		service:     st.Checkout(),
	}
}
