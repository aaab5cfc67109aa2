package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"chargeonce"
	"chargeonce/api"
	"chargeonce/internal/openapitest"
	"chargeonce/internal/webhook"
	"chargeonce/provider"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/workflows"
)

// acme is the second provider of the events API, beside the default.
const acme = "acme"

// eventsAPI is the API with the events of two providers, the default and
// acme, each with a webhook secret and a lookup of its own, over a Temporal
// client whose signals the test expects.
type eventsAPI struct {
	*testAPI
	// secret signs the default provider's events, acmeSecret acme's.
	secret, acmeSecret webhook.Secret
	// finders are each provider's lookups.
	finders  map[string]*finder
	temporal *mocks.Client
}

func startEventsAPI(t *testing.T) *eventsAPI {
	t.Helper()
	secret, err := webhook.ParseSecret(webhook.NewSecret())
	require.NoError(t, err)
	acmeSecret, err := webhook.ParseSecret(webhook.NewSecret())
	require.NoError(t, err)
	temporal := &mocks.Client{}
	t.Cleanup(func() { temporal.AssertExpectations(t) })
	finders := map[string]*finder{chargeonce.DefaultProvider: {}, acme: {}}
	secrets := map[string][]webhook.Secret{chargeonce.DefaultProvider: {secret}, acme: {acmeSecret}}
	lookups := map[string]refund.Finder{chargeonce.DefaultProvider: finders[chargeonce.DefaultProvider], acme: finders[acme]}
	return &eventsAPI{testAPI: startTestAPIWith(t, nil, temporal, secrets, lookups), secret: secret, acmeSecret: acmeSecret,
		finders: finders, temporal: temporal}
}

// finder is a provider's lookup that holds no charge and no refund, and
// keeps the merchant references it was asked about.
type finder struct {
	mu    sync.Mutex
	asked []string
}

func (f *finder) FindCharges(_ context.Context, reference string) ([]provider.Charge, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, reference)
	return nil, nil
}

func (f *finder) FindRefunds(_ context.Context, _, reference string) ([]provider.Refund, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, reference)
	return nil, nil
}

func (f *finder) references() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// openAttempt stores an order with an open attempt of the default
// provider, as a checkout does.
func (a *testAPI) openAttempt(t *testing.T) store.Attempt {
	t.Helper()
	return a.openAttemptAt(t, chargeonce.DefaultProvider)
}

// openAttemptAt stores an order with an open attempt sent to the provider
// named name.
func (a *testAPI) openAttemptAt(t *testing.T, name string) store.Attempt {
	t.Helper()
	ctx := context.Background()
	order, err := a.store.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "Collected works")
	require.NoError(t, err)
	_, attempt, _, err := a.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID: order.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"), Key: uuid.Must(uuid.NewV7()).String(),
		ReferencePrefix: "chargeonce", Now: time.Now(), AbandonAfter: 30 * time.Minute,
		Provider: name,
	})
	require.NoError(t, err)
	return attempt
}

// expectSignal expects one provider-event update to the attempt's
// workflow, answered with err once it is accepted.
func (a *eventsAPI) expectSignal(attempt store.Attempt, chargeID string, err error) {
	a.temporal.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool {
		return o.WorkflowID == workflows.WorkflowID(attempt.Key) && o.UpdateName == chargeonce.UpdateProviderEvent &&
			o.UpdateID != "" && o.WaitForStage == client.WorkflowUpdateStageAccepted &&
			reflect.DeepEqual(o.Args, []any{workflows.ProviderEvent{ChargeID: chargeID}})
	})).Return(nil, err).Once()
}

func eventJSON(typ, chargeID, reference string) string {
	status := "succeeded"
	if typ == "charge.failed" {
		status = "failed"
	}
	return fmt.Sprintf(`{"type":%q,"data":{"id":%q,"object":"charge","amount":54890,"currency":"TRY","status":%q,"merchant_reference":%q}}`,
		typ, chargeID, status, reference)
}

// post delivers body with headers to POST /webhooks/provider, and returns
// the status and the result the API reports.
func (a *eventsAPI) post(t *testing.T, h http.Header, body string) (int, string) {
	t.Helper()
	return a.postTo(t, api.WebhookPath, h, body)
}

// postTo delivers body with headers to POST path, and returns the status
// and the result the API reports, or the problem type.
func (a *eventsAPI) postTo(t *testing.T, path string, h http.Header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var answer struct {
		Result string `json:"result"`
		Type   string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(data, &answer), string(data))
	if resp.StatusCode != http.StatusOK {
		require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		return resp.StatusCode, answer.Type
	}
	return resp.StatusCode, answer.Result
}

// deliver signs body as event id, sent now by the default provider, and
// posts it to WebhookPath.
func (a *eventsAPI) deliver(t *testing.T, id, body string) (int, string) {
	t.Helper()
	return a.deliverTo(t, api.WebhookPath, a.secret, id, body)
}

// deliverTo signs body with secret as event id, sent now, and posts it to
// path.
func (a *eventsAPI) deliverTo(t *testing.T, path string, secret webhook.Secret, id, body string) (int, string) {
	t.Helper()
	h := http.Header{}
	webhook.Sign(h, id, time.Now(), []byte(body), secret)
	return a.postTo(t, path, h, body)
}

// counted reads chargeonce_provider_events_total{result} from /metrics.
func (a *eventsAPI) counted(t *testing.T, result string) string {
	t.Helper()
	_, _, body := a.send(t, http.MethodGet, "/metrics", "", "")
	prefix := `chargeonce_provider_events_total{result="` + result + `"} `
	for line := range strings.SplitSeq(string(body), "\n") {
		if n, ok := strings.CutPrefix(line, prefix); ok {
			return n
		}
	}
	return "0"
}

func TestProviderEvent_SignalsTheOpenAttemptOnceAndAcknowledgesDuplicates(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttempt(t)
	a.expectSignal(attempt, "ch_000001", nil)
	body := eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference)

	status, result := a.deliver(t, "msg_1", body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)

	// The same event again, signed anew as a redelivery is: acknowledged,
	// and no second signal (the mock allows one).
	status, result = a.deliver(t, "msg_1", body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "duplicate", result)

	events, err := a.store.ProviderEvents(context.Background(), attempt.MerchantReference)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "signaled", events[0].Result)
	require.JSONEq(t, body, string(events[0].Payload))
	require.Equal(t, "1", a.counted(t, "signaled"))
	require.Equal(t, "1", a.counted(t, "duplicate"))
	got, err := a.store.GetAttempt(context.Background(), attempt.Key)
	require.NoError(t, err)
	require.Equal(t, chargeonce.AttemptOpen, got.Status, "an event settles nothing by itself")
}

func TestProviderEvent_FailedAfterSucceededChangesNothing(t *testing.T) {
	a := startEventsAPI(t)
	ctx := context.Background()
	attempt := a.openAttempt(t)
	a.expectSignal(attempt, "ch_000001", nil)
	status, result := a.deliver(t, "msg_succeeded", eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)
	// The workflow's lookup found the charge and settled the attempt.
	_, err := a.store.SettleAttempt(ctx, attempt.Key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
	require.NoError(t, err)

	// A failed charge of the same reference, delivered late.
	status, result = a.deliver(t, "msg_failed", eventJSON("charge.failed", "ch_000002", attempt.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "settled", result)

	order, attempts, err := a.store.GetOrder(ctx, attempt.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status)
	require.Equal(t, "ch_000001", order.ProviderPaymentID)
	require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
	require.Equal(t, "1", a.counted(t, "settled"))
}

func TestProviderEvent_UnknownReferenceIsAcknowledgedCountedAndKept(t *testing.T) {
	a := startEventsAPI(t)
	status, result := a.deliver(t, "msg_1", eventJSON("charge.succeeded", "ch_000001", "elsewhere_1001_x"))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "unknown_reference", result)
	events, err := a.store.ProviderEvents(context.Background(), "elsewhere_1001_x")
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "unknown_reference", events[0].Result)
	require.Equal(t, "1", a.counted(t, "unknown_reference"))
}

func TestProviderEvent_TemporalUnreachableIs503AndTheRedeliverySignals(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttempt(t)
	body := eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference)
	a.expectSignal(attempt, "ch_000001", serviceerror.NewUnavailable("connection refused"))

	status, kind := a.deliver(t, "msg_1", body)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "urn:chargeonce:problem:unavailable", kind)
	events, err := a.store.ProviderEvents(context.Background(), attempt.MerchantReference)
	require.NoError(t, err)
	require.Len(t, events, 1, "the event is kept")
	require.Empty(t, events[0].Result, "but not handled")

	a.expectSignal(attempt, "ch_000001", nil)
	status, result := a.deliver(t, "msg_1", body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)
	require.Equal(t, "1", a.counted(t, "unavailable"))
	require.Equal(t, "1", a.counted(t, "signaled"))
}

func TestProviderEvent_BadSignatureOrEventIsRefusedAndStoresNothing(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttempt(t)
	good := eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference)
	duplicateType := strings.Replace(good, `"type":"charge.succeeded"`, `"type":"charge.failed","type":"charge.succeeded"`, 1)
	require.NotEqual(t, good, duplicateType)
	badUTF8 := strings.Replace(good, "ch_000001", "ch_\xff", 1)
	other, err := webhook.ParseSecret(webhook.NewSecret())
	require.NoError(t, err)
	signed := func(secret webhook.Secret, at time.Time, body string) http.Header {
		h := http.Header{}
		webhook.Sign(h, "msg_1", at, []byte(body), secret)
		return h
	}
	tests := []struct {
		name    string
		headers http.Header
		body    string
		status  int
		result  string
	}{
		{"no signature", http.Header{}, good, http.StatusUnauthorized, "refused"},
		{"another secret", signed(other, time.Now(), good), good, http.StatusUnauthorized, "refused"},
		{"stale", signed(a.secret, time.Now().Add(-webhook.Tolerance-time.Minute), good), good, http.StatusUnauthorized, "refused"},
		{"tampered body", signed(a.secret, time.Now(), good), strings.Replace(good, "ch_000001", "ch_000002", 1), http.StatusUnauthorized, "refused"},
		{"not JSON", signed(a.secret, time.Now(), "charge.succeeded"), "charge.succeeded", http.StatusBadRequest, "malformed"},
		{"unknown type", signed(a.secret, time.Now(), eventJSON("charge.refunded", "ch_000001", attempt.MerchantReference)),
			eventJSON("charge.refunded", "ch_000001", attempt.MerchantReference), http.StatusBadRequest, "malformed"},
		{"no reference", signed(a.secret, time.Now(), eventJSON("charge.succeeded", "ch_000001", "")),
			eventJSON("charge.succeeded", "ch_000001", ""), http.StatusBadRequest, "malformed"},
		{"no data", signed(a.secret, time.Now(), `{"type":"charge.succeeded"}`), `{"type":"charge.succeeded"}`, http.StatusBadRequest, "malformed"},
		{"too large", signed(a.secret, time.Now(), strings.Repeat(" ", 65<<10)+good), strings.Repeat(" ", 65<<10) + good, http.StatusBadRequest, "malformed"},
		// Signed or not, an event means one thing: a duplicate member or
		// invalid UTF-8 is refused, not read as whichever copy wins.
		{"duplicate type", signed(a.secret, time.Now(), duplicateType), duplicateType, http.StatusBadRequest, "malformed"},
		{"invalid UTF-8", signed(a.secret, time.Now(), badUTF8), badUTF8, http.StatusBadRequest, "malformed"},
	}
	before := a.snapshot(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A refused event breaks the document's rules on purpose.
			tt.headers.Set(openapitest.ResponsesOnlyHeader, "1")
			status, _ := a.post(t, tt.headers, tt.body)
			require.Equal(t, tt.status, status)
			require.Equal(t, before, a.snapshot(t), "a refused event changes nothing")
		})
	}
	require.Equal(t, "4", a.counted(t, "refused"))
	require.Equal(t, "7", a.counted(t, "malformed"))
}

func TestProviderEvent_AWorkflowThatClosedMeanwhileSettledTheAttempt(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttempt(t)
	// The workflow settles the attempt and closes while the event is on its
	// way: the update is aborted by the close.
	a.temporal.On("UpdateWorkflow", mock.Anything, mock.Anything).Run(func(mock.Arguments) {
		_, err := a.store.SettleAttempt(context.Background(), attempt.Key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
		require.NoError(t, err)
	}).Return(nil, serviceerror.NewNotFound("workflow update was aborted by closing workflow")).Once()

	status, result := a.deliver(t, "msg_1", eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "settled", result)
	require.Equal(t, "1", a.counted(t, "settled"))
}

func TestProviderEvent_EachProvidersPathVerifiesWithItsSecretsAndTheLegacyPathIsTheDefaults(t *testing.T) {
	a := startEventsAPI(t)
	ours, theirs := a.openAttempt(t), a.openAttemptAt(t, acme)

	a.expectSignal(ours, "ch_000001", nil)
	status, result := a.deliverTo(t, api.ProviderWebhookPath(chargeonce.DefaultProvider), a.secret, "msg_1",
		eventJSON("charge.succeeded", "ch_000001", ours.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)

	a.expectSignal(theirs, "ch_000002", nil)
	status, result = a.deliverTo(t, api.ProviderWebhookPath(acme), a.acmeSecret, "msg_2",
		eventJSON("charge.succeeded", "ch_000002", theirs.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)

	// The path that dashboards configured before providers had paths is
	// the default provider's.
	a.expectSignal(ours, "ch_000003", nil)
	status, result = a.deliverTo(t, api.WebhookPath, a.secret, "msg_3",
		eventJSON("charge.succeeded", "ch_000003", ours.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)
	require.Equal(t, "3", a.counted(t, "signaled"))
}

func TestProviderEvent_UnknownProviderIs404AndStoresNothing(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttempt(t)
	before := a.snapshot(t)
	for _, name := range []string{"elsewhere", "Default"} {
		status, kind := a.deliverTo(t, api.WebhookPath+"/"+name, a.secret, "msg_1",
			eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference))
		require.Equal(t, http.StatusNotFound, status, name)
		require.Equal(t, "urn:chargeonce:problem:not-found", kind, name)
	}
	require.Equal(t, before, a.snapshot(t), "an event for no known provider changes nothing")
	events, err := a.store.ProviderEvents(context.Background(), attempt.MerchantReference)
	require.NoError(t, err)
	require.Empty(t, events)
}

func TestProviderEvent_SignedWithAnotherProvidersSecretIsRefused(t *testing.T) {
	a := startEventsAPI(t)
	ours, theirs := a.openAttempt(t), a.openAttemptAt(t, acme)
	before := a.snapshot(t)
	tests := []struct {
		name   string
		path   string
		secret webhook.Secret
		ref    string
	}{
		{"the default's secret on acme's path", api.ProviderWebhookPath(acme), a.secret, theirs.MerchantReference},
		{"acme's secret on the default's path", api.ProviderWebhookPath(chargeonce.DefaultProvider), a.acmeSecret, ours.MerchantReference},
		{"acme's secret on the legacy path", api.WebhookPath, a.acmeSecret, ours.MerchantReference},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, kind := a.deliverTo(t, tt.path, tt.secret, "msg_1", eventJSON("charge.succeeded", "ch_000001", tt.ref))
			require.Equal(t, http.StatusUnauthorized, status)
			require.Equal(t, "urn:chargeonce:problem:unauthorized", kind)
			require.Equal(t, before, a.snapshot(t), "a refused event changes nothing")
		})
	}
	require.Equal(t, "3", a.counted(t, "refused"))
}

func TestProviderEvent_AboutAnotherProvidersAttemptIsUnconfirmedAndChangesNothing(t *testing.T) {
	a := startEventsAPI(t)
	ctx := context.Background()
	open := a.openAttempt(t)
	declined := a.openAttempt(t)
	_, err := a.store.SettleAttempt(ctx, declined.Key, chargeonce.AttemptDeclined, "", time.Now())
	require.NoError(t, err)

	// No workflow is told (the Temporal mock expects nothing), and no
	// provider is asked about a charge of another's attempt.
	for i, attempt := range []store.Attempt{open, declined} {
		status, result := a.deliverTo(t, api.ProviderWebhookPath(acme), a.acmeSecret, fmt.Sprintf("msg_%d", i),
			eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference))
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "unconfirmed", result)
		events, err := a.store.ProviderEvents(ctx, attempt.MerchantReference)
		require.NoError(t, err)
		require.Len(t, events, 1, "the event is kept for the books")
		require.Equal(t, "unconfirmed", events[0].Result)
		got, err := a.store.GetAttempt(ctx, attempt.Key)
		require.NoError(t, err)
		require.Equal(t, attempt.Key == open.Key, got.Status == chargeonce.AttemptOpen)
		require.Empty(t, got.ProviderPaymentID)
	}
	require.Empty(t, a.finders[acme].references())
	require.Empty(t, a.finders[chargeonce.DefaultProvider].references())
	require.Equal(t, "2", a.counted(t, "unconfirmed"))
	require.Contains(t, a.logs.String(), "provider event about an attempt of another provider")
}

func TestProviderEvent_ALateChargeIsLookedUpAtThePathsProvider(t *testing.T) {
	a := startEventsAPI(t)
	attempt := a.openAttemptAt(t, acme)
	_, err := a.store.SettleAttempt(context.Background(), attempt.Key, chargeonce.AttemptDeclined, "", time.Now())
	require.NoError(t, err)

	status, result := a.deliverTo(t, api.ProviderWebhookPath(acme), a.acmeSecret, "msg_1",
		eventJSON("charge.succeeded", "ch_000001", attempt.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	// acme, asked, holds no such charge.
	require.Equal(t, "late_charge_unverified", result)
	require.Equal(t, []string{attempt.MerchantReference}, a.finders[acme].references())
	require.Empty(t, a.finders[chargeonce.DefaultProvider].references())
}

func TestProviderEvent_AboutAnotherProvidersRefundIsUnconfirmedAndChangesNothing(t *testing.T) {
	a := startEventsAPI(t)
	ctx := context.Background()
	// acme charged the order, so its refund is acme's.
	attempt := a.openAttemptAt(t, acme)
	_, err := a.store.SettleAttempt(ctx, attempt.Key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
	require.NoError(t, err)
	r, _, err := a.store.StartRefund(ctx, store.NewRefund{OrderID: attempt.OrderID, Reason: "returned", Origin: chargeonce.RefundByMerchant,
		Key: uuid.Must(uuid.NewV7()).String(), ReferencePrefix: "chargeonce", Now: time.Now()})
	require.NoError(t, err)
	require.Equal(t, acme, r.Provider)
	body := fmt.Sprintf(`{"type":"refund.failed","data":{"id":"re_000001","object":"refund","charge":"ch_000001","merchant_reference":%q,"failure_reason":"expired_or_canceled_card"}}`,
		r.MerchantReference)

	// The default provider cannot speak for acme's refund: its workflow is
	// not told (the Temporal mock expects no signal).
	status, result := a.deliver(t, "msg_1", body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "unconfirmed", result)
	got, err := a.store.GetRefund(ctx, r.Key)
	require.NoError(t, err)
	require.Equal(t, chargeonce.RefundPending, got.Status)
	require.Equal(t, "1", a.counted(t, "unconfirmed"))

	// acme's own event about it tells its workflow.
	a.temporal.On("SignalWorkflow", mock.Anything, workflows.RefundWorkflowID(r.Key), "", chargeonce.SignalRefundEvent,
		workflows.RefundEvent{RefundID: "re_000001", Type: "refund.failed"}).Return(nil).Once()
	status, result = a.deliverTo(t, api.ProviderWebhookPath(acme), a.acmeSecret, "msg_2", body)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)
}

// The event of a hold's end reaches the payment workflow that keeps the
// hold, which reads the hold at once, and the workflow of a move of it
// still pending; the event of an authorization is a charge's, for an open
// attempt.
func TestProviderEvent_AHoldsEndReachesThePaymentThatKeepsIt(t *testing.T) {
	a := startEventsAPI(t)
	ctx := context.Background()
	order, err := a.store.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "Collected works")
	require.NoError(t, err)
	_, held, _, err := a.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID: order.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"), Key: uuid.Must(uuid.NewV7()).String(),
		ReferencePrefix: "chargeonce", Now: time.Now(), AbandonAfter: 30 * time.Minute,
		Provider: chargeonce.DefaultProvider, Capture: chargeonce.CaptureManual,
	})
	require.NoError(t, err)
	a.expectSignal(held, "ch_hold", nil)
	status, result := a.deliver(t, "msg_authorized", eventJSON("charge.authorized", "ch_hold", held.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)
	_, err = a.store.SettleAuthorization(ctx, held.Key, store.NewHold{ChargeID: "ch_hold", Deadline: time.Now().Add(time.Hour), At: time.Now()})
	require.NoError(t, err)

	// A void of the merchant's is pending: its workflow hears of the event
	// too.
	pending, _, err := a.store.StartMove(ctx, store.NewMove{OrderID: order.ID, Kind: chargeonce.MoveVoid, Origin: chargeonce.MoveByDeadline,
		Key: uuid.Must(uuid.NewV7()).String(), ReferencePrefix: "chargeonce", Now: time.Now()})
	require.NoError(t, err)
	a.temporal.On("SignalWorkflow", mock.Anything, workflows.MoveWorkflowID(pending.Key), "", chargeonce.SignalMoveEvent,
		workflows.ProviderEvent{ChargeID: "ch_hold"}).Return(nil).Once()
	a.expectSignal(held, "ch_hold", nil)
	status, result = a.deliver(t, "msg_voided", eventJSON("charge.voided", "ch_hold", held.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "signaled", result)

	// A hold's event about another charge of the reference tells nothing.
	status, result = a.deliver(t, "msg_other", eventJSON("charge.captured", "ch_other", held.MerchantReference))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "settled", result)
	a.temporal.AssertExpectations(t)
}
