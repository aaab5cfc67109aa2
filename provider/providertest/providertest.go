// Package providertest runs provider adapters against the fake provider,
// whose dialects implement their wire formats on their own: a mistake on
// either side shows up in these runs instead of agreeing with itself.
package providertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
)

// Serve starts a fake provider configured by cfg behind a real HTTP server,
// and returns it with the server's URL. Both stop when the test ends.
func Serve(t testing.TB, cfg fakeprovider.Config) (*fakeprovider.Provider, string) {
	t.Helper()
	fp, err := fakeprovider.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(fp)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, fp.Close(ctx))
	})
	return fp, srv.URL
}

// SlowCharge sends req three times to a fake that processes every new
// charge until told otherwise: first, which starts the charge; second,
// while it is processing; third, once it is stored. It checks what every
// dialect must answer (the second in flight and not certainly unprocessed,
// the first approved, the third the replay of the same charge, one charge
// in all) and returns the second and third, for the checks of a dialect.
// port starts the fake with the configuration it is given and a client of it.
func SlowCharge(t *testing.T, port func(fakeprovider.Config) (*fakeprovider.Provider, provider.Port), req provider.ChargeRequest) (second, third provider.Result) {
	t.Helper()
	processing := make(chan struct{}, 1)
	finish := make(chan time.Time)
	fp, c := port(fakeprovider.Config{
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Minute},
		After: func(time.Duration) <-chan time.Time {
			processing <- struct{}{}
			return finish
		},
	})
	firstDone := make(chan provider.Result, 1)
	go func() { firstDone <- c.Charge(context.Background(), req) }()
	<-processing

	second = c.Charge(context.Background(), req)
	close(finish)
	first := <-firstDone
	third = c.Charge(context.Background(), req)

	require.Equal(t, provider.InFlight, second.Outcome, second.Detail)
	require.False(t, second.NotProcessed(), "a request in flight may yet charge")
	require.Equal(t, provider.Approved, first.Outcome, first.Detail)
	require.Equal(t, provider.Approved, third.Outcome, third.Detail)
	require.True(t, third.Replayed)
	require.Equal(t, first.ChargeID, third.ChargeID)
	require.Len(t, fp.Charges(), 1)
	return second, third
}

// Another is req under its own key, with its own reference and card, so
// that it is a payment of its own.
func Another(req provider.ChargeRequest, key, source string) provider.ChargeRequest {
	req.Key, req.Source = key, source
	req.MerchantReference = "bookstore-1001-" + key
	return req
}

// Decline is one of the fake provider's declining test cards.
type Decline struct {
	// Name is the card's name after its dialect's prefix: tok_<Name> in
	// the draft's, pm_card_<Name> (or tok_<Name>) in Stripe's.
	Name string
	// Code is the decline code the adapter must read.
	Code string
	// ProviderTrouble is whether the decline is the provider's own trouble
	// rather than the card's.
	ProviderTrouble bool
}

// Declines are every declining test card of the fake provider.
var Declines = []Decline{
	{"chargeDeclined", "do_not_honor", false},
	{"chargeDeclinedInsufficientFunds", "insufficient_funds", false},
	{"chargeDeclinedLostCard", "lost_card", false},
	{"chargeDeclinedStolenCard", "stolen_card", false},
	{"chargeDeclinedIssuerNotAvailable", "issuer_not_available", true},
	{"chargeDeclinedProcessingError", "processing_error", true},
	{"chargeDeclinedTryAgainLater", "try_again_later", true},
}

// Declined sends req, whose source is the declining card d, and checks
// what every dialect must make of it: a 402 read as a decline with d's
// code, which says whether it is the provider's trouble or the card's, and
// a failed charge found for the reference, so that reconciliation tells a
// decline from a charge that never arrived.
func Declined(t *testing.T, c provider.Port, req provider.ChargeRequest, d Decline) {
	t.Helper()
	res := c.Charge(context.Background(), req)
	require.Equal(t, provider.Declined, res.Outcome, res.Detail)
	require.Equal(t, http.StatusPaymentRequired, res.StatusCode)
	require.Equal(t, d.Code, res.DeclineCode)
	require.Equal(t, d.ProviderTrouble, res.ProviderTrouble, "whose trouble the decline is")
	require.NotEmpty(t, res.ChargeID, "a declined card leaves a failed charge")
	found, err := c.FindCharges(context.Background(), req.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, res.ChargeID, found[0].ID)
	require.Equal(t, provider.StatusFailed, found[0].Status)
}

// RefusedCard sends req, whose source the fake refuses as no card it can
// charge, twice under its key, and checks what every dialect must make of
// it: a decline with provider.DeclineInvalidPaymentMethod each time, since
// the customer's card is at fault and not our request, certainly not
// processed, and no charge at the provider or found for the reference.
func RefusedCard(t *testing.T, fp *fakeprovider.Provider, c provider.Port, req provider.ChargeRequest) {
	t.Helper()
	for range 2 {
		res := c.Charge(context.Background(), req)
		require.Equal(t, provider.Declined, res.Outcome, res.Detail)
		require.Equal(t, provider.DeclineInvalidPaymentMethod, res.DeclineCode)
		require.False(t, res.ProviderTrouble, "the card's decline, not the provider's trouble")
		require.Empty(t, res.ChargeID, "a refused card leaves no charge")
		require.True(t, res.NotProcessed(), "a refused card is refused before anything is processed")
	}
	require.Empty(t, fp.Charges())
	found, err := c.FindCharges(context.Background(), req.MerchantReference)
	require.NoError(t, err)
	require.Empty(t, found)
}

// RefundOf is a refund of charge under key, with a reference of its own,
// as chargeonce.RefundReference builds one.
func RefundOf(charge provider.Charge, key string, amount int64) provider.RefundRequest {
	return provider.RefundRequest{
		Key:               key,
		ChargeID:          charge.ID,
		Amount:            amount,
		Currency:          charge.Currency,
		Reason:            "requested_by_customer",
		MerchantReference: "bookstore-refund-" + strings.ReplaceAll(key, "-", ""),
	}
}

// Refunds charges req, then refunds the charge in two parts and once more,
// each under its own key, and checks what every dialect must make of it:
// each part approved as a succeeded refund of exactly what was asked,
// replayed under its key without a second refund, found again by its
// reference, and the third refused, since nothing of the charge is left:
// a Declined with the provider's code, which is a result and not an error,
// and which no lookup takes for a refund that went through. keys are the
// three refunds' keys. It returns the charge and the refusal, for the checks
// of a dialect.
func Refunds(t *testing.T, fp *fakeprovider.Provider, c provider.Port, req provider.ChargeRequest, keys [3]string) (provider.Charge, provider.RefundResult) {
	t.Helper()
	ctx := context.Background()
	charged := c.Charge(ctx, req)
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
	charge := *charged.Charge
	first, rest := charge.Amount/3, charge.Amount-charge.Amount/3

	var parts []provider.Refund
	for i, amount := range []int64{first, rest} {
		refund := RefundOf(charge, keys[i], amount)
		res := c.Refund(ctx, refund)
		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		require.True(t, res.Sent)
		require.False(t, res.Replayed)
		require.NotNil(t, res.Refund)
		require.Equal(t, provider.RefundSucceeded, res.Refund.Status)
		require.Equal(t, charge.ID, res.Refund.ChargeID)
		require.Equal(t, amount, res.Refund.Amount)
		require.Equal(t, charge.Currency, res.Refund.Currency)
		require.Equal(t, refund.MerchantReference, res.Refund.MerchantReference)

		again := c.Refund(ctx, refund)
		require.Equal(t, provider.Approved, again.Outcome, again.Detail)
		require.True(t, again.Replayed, "the same key is answered from the provider's store")
		require.Equal(t, res.Refund.ID, again.Refund.ID)

		found, err := c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
		require.NoError(t, err)
		require.Equal(t, []provider.Refund{*res.Refund}, found, "the lookup finds the refund the answer named")
		parts = append(parts, *res.Refund)
	}
	require.NotEqual(t, parts[0].ID, parts[1].ID)

	refusal := RefundOf(charge, keys[2], 1)
	refused := c.Refund(ctx, refusal)
	require.Equal(t, provider.Declined, refused.Outcome, refused.Detail)
	require.Equal(t, "charge_already_refunded", refused.DeclineCode)
	require.False(t, refused.Outcome.Retryable())
	require.False(t, refused.NotProcessed(), "the refusal is stored under the key")
	again := c.Refund(ctx, refusal)
	require.Equal(t, provider.Declined, again.Outcome, again.Detail)
	require.True(t, again.Replayed, "a refusal is replayed like a decline")
	found, err := c.FindRefunds(ctx, charge.ID, refusal.MerchantReference)
	require.NoError(t, err)
	for _, r := range found {
		require.Equal(t, provider.RefundFailed, r.Status, "a refusal is never found as money returned")
	}

	var sum int64
	for _, r := range fp.Refunds() {
		if r.Status != fakeprovider.RefundFailed {
			sum += r.Amount
		}
	}
	require.Equal(t, charge.Amount, sum, "the provider returned the charge once, in two parts")
	return charge, refused
}

// PendingRefund refunds charge under key while the fake holds refunds
// pending, and checks what every dialect must make of a refund that
// settles later: approved as pending, found pending, found failed with the
// provider's reason once the provider fails it, and the key still answering
// with the refund as it stands. It returns the refund's result.
func PendingRefund(t *testing.T, fp *fakeprovider.Provider, c provider.Port, charge provider.Charge, key string) provider.RefundResult {
	t.Helper()
	ctx := context.Background()
	refund := RefundOf(charge, key, charge.Amount)
	fp.HoldRefunds(true)
	res := c.Refund(ctx, refund)
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, provider.RefundPending, res.Refund.Status)
	found, err := c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, provider.RefundPending, found[0].Status, "a pending refund is looked up until it settles")

	_, err = fp.SettleRefund(res.Refund.ID, fakeprovider.RefundFailed, "lost_or_stolen_card")
	require.NoError(t, err)
	found, err = c.FindRefunds(ctx, charge.ID, refund.MerchantReference)
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, res.Refund.ID, found[0].ID)
	require.Equal(t, provider.RefundFailed, found[0].Status)
	require.Equal(t, "lost_or_stolen_card", found[0].FailureReason)
	return res
}

// SlowRefund sends req three times to a fake that processes every new
// request until told otherwise, as SlowCharge does for a charge, and checks
// the same: in flight and not certainly unprocessed while the first is
// processing, then the first approved and the third its replay, one refund
// in all. charge must already exist at the fake; port starts the fake with
// the configuration it is given, a client of it, and the charge.
func SlowRefund(t *testing.T, port func(fakeprovider.Config) (*fakeprovider.Provider, provider.Port, provider.Charge), key string) (second, third provider.RefundResult) {
	t.Helper()
	processing := make(chan struct{}, 1)
	finish := make(chan time.Time)
	// The fake waits on After in its slow mode only, which starts once
	// the charge is made.
	fp, c, charge := port(fakeprovider.Config{
		After: func(time.Duration) <-chan time.Time {
			processing <- struct{}{}
			return finish
		},
	})
	require.NoError(t, fp.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Minute}))
	req := RefundOf(charge, key, charge.Amount)
	firstDone := make(chan provider.RefundResult, 1)
	go func() { firstDone <- c.Refund(context.Background(), req) }()
	<-processing

	second = c.Refund(context.Background(), req)
	close(finish)
	first := <-firstDone
	third = c.Refund(context.Background(), req)

	require.Equal(t, provider.InFlight, second.Outcome, second.Detail)
	require.False(t, second.NotProcessed(), "a request in flight may yet refund")
	require.Equal(t, provider.Approved, first.Outcome, first.Detail)
	require.Equal(t, provider.Approved, third.Outcome, third.Detail)
	require.True(t, third.Replayed)
	require.Equal(t, first.Refund.ID, third.Refund.ID)
	require.Len(t, fp.Refunds(), 1)
	return second, third
}

// Holds authorizes holds of req's amount, each under a key and a reference
// of its own made from req.Key, captures and voids them, and checks what
// every dialect must make of it: an authorization is approved as
// authorized with its expiry and read back alike by GetCharge; a capture
// in full or in part is approved with exactly what it took, replayed under
// its key, and its key with another amount is our bug; a void is approved
// as voided; and every capture or void the charge's state forbids is
// Declined with the port's code, a result stored under its key. It returns
// the capture refused after a void, for the checks of a dialect.
func Holds(t *testing.T, c provider.Port, req provider.ChargeRequest) provider.CaptureResult {
	t.Helper()
	ctx := context.Background()
	key := func(name string) string { return req.Key + "-" + name }
	hold := func(name string) provider.Charge {
		t.Helper()
		r := Another(req, key(name), req.Source)
		r.Hold = true
		res := c.Charge(ctx, r)
		require.Equal(t, provider.Approved, res.Outcome, res.Detail)
		ch := *res.Charge
		require.True(t, ch.Held(), "an authorization is %s", ch.Status)
		require.False(t, ch.Succeeded(), "an authorization took no money yet")
		require.Equal(t, req.Amount, ch.Amount)
		require.Zero(t, ch.AmountCaptured)
		require.True(t, ch.CaptureBefore.After(ch.Created), "an authorization says when it expires")
		sameCharge(t, c, ch)
		return ch
	}
	captureOf := func(ch provider.Charge, name string, amount int64) provider.CaptureRequest {
		return provider.CaptureRequest{Key: key(name), ChargeID: ch.ID, Amount: amount, Currency: ch.Currency}
	}
	voidOf := func(ch provider.Charge, name string) provider.VoidRequest {
		return provider.VoidRequest{Key: key(name), ChargeID: ch.ID}
	}
	declined := func(x provider.Exchange, code, want string) {
		t.Helper()
		require.Equal(t, provider.Declined, x.Outcome, x.Detail)
		require.Equal(t, want, code)
		require.False(t, x.NotProcessed(), "a refusal is stored under the key")
	}

	full := hold("full")
	capture := captureOf(full, "full-capture", full.Amount)
	captured := c.Capture(ctx, capture)
	require.Equal(t, provider.Approved, captured.Outcome, captured.Detail)
	require.False(t, captured.Replayed)
	require.Equal(t, full.ID, captured.Charge.ID)
	require.True(t, captured.Charge.Succeeded())
	require.Equal(t, full.Amount, captured.Charge.AmountCaptured)
	sameCharge(t, c, *captured.Charge)
	again := c.Capture(ctx, capture)
	require.Equal(t, provider.Approved, again.Outcome, again.Detail)
	require.True(t, again.Replayed, "the same key is answered from the provider's store")
	require.Equal(t, captured.Charge, again.Charge)
	capture.Amount--
	reused := c.Capture(ctx, capture)
	require.Equal(t, provider.ClassOurBug, reused.Class(), "the key with another amount: %s", reused.Detail)
	voided := c.Void(ctx, voidOf(full, "full-void"))
	declined(voided.Exchange, voided.DeclineCode, provider.DeclineHoldCaptured)

	part := hold("part")
	partial := c.Capture(ctx, captureOf(part, "part-capture", part.Amount/3))
	require.Equal(t, provider.Approved, partial.Outcome, partial.Detail)
	require.True(t, partial.Charge.Succeeded())
	require.Equal(t, part.Amount/3, partial.Charge.AmountCaptured, "a partial capture takes what it asks, and releases the rest")
	require.Equal(t, part.Amount, partial.Charge.Amount)

	released := hold("void")
	void := voidOf(released, "void-void")
	voided = c.Void(ctx, void)
	require.Equal(t, provider.Approved, voided.Outcome, voided.Detail)
	require.Equal(t, released.ID, voided.Charge.ID)
	require.Equal(t, provider.StatusVoided, voided.Charge.Status)
	require.Zero(t, voided.Charge.AmountCaptured)
	sameCharge(t, c, *voided.Charge)
	replayed := c.Void(ctx, void)
	require.Equal(t, provider.Approved, replayed.Outcome, replayed.Detail)
	require.True(t, replayed.Replayed)
	afterVoid := c.Capture(ctx, captureOf(released, "void-capture", released.Amount))
	declined(afterVoid.Exchange, afterVoid.DeclineCode, provider.DeclineHoldVoided)

	big := hold("big")
	tooMuch := c.Capture(ctx, captureOf(big, "big-capture", big.Amount+1))
	declined(tooMuch.Exchange, tooMuch.DeclineCode, provider.DeclineAmountTooLarge)
	sameCharge(t, c, big)

	charged := c.Charge(ctx, Another(req, key("plain"), req.Source))
	require.Equal(t, provider.Approved, charged.Outcome, charged.Detail)
	notAHold := c.Capture(ctx, captureOf(*charged.Charge, "plain-capture", charged.Charge.Amount))
	declined(notAHold.Exchange, notAHold.DeclineCode, provider.DeclineNotAHold)
	return afterVoid
}

// sameCharge checks that GetCharge reads want back as it is. The key a
// charge was created under is left out: an answer to its creation may
// show it where a read does not.
func sameCharge(t *testing.T, c provider.Port, want provider.Charge) {
	t.Helper()
	got, err := c.GetCharge(context.Background(), want.ID)
	require.NoError(t, err)
	want.IdempotencyKey, got.IdempotencyKey = "", ""
	require.Equal(t, want, got)
}

// ExpiredHold authorizes req as a hold at a fake whose clock it moves past
// the hold window, and checks what every dialect must make of a hold that
// was not captured in time: read back as expired, and its capture and its
// void Declined with hold_expired. port starts the fake with the
// configuration it is given and a client of it.
func ExpiredHold(t *testing.T, port func(fakeprovider.Config) (*fakeprovider.Provider, provider.Port), req provider.ChargeRequest) {
	t.Helper()
	ctx := context.Background()
	var now atomic.Pointer[time.Time]
	start := time.Now().UTC().Truncate(time.Second)
	now.Store(&start)
	fp, c := port(fakeprovider.Config{Now: func() time.Time { return *now.Load() }})
	req.Hold = true
	res := c.Charge(ctx, req)
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	require.Equal(t, start.Add(fp.HoldWindow()), res.Charge.CaptureBefore)

	later := res.Charge.CaptureBefore.Add(time.Second)
	now.Store(&later)

	got, err := c.GetCharge(ctx, res.Charge.ID)
	require.NoError(t, err)
	require.Equal(t, provider.StatusExpired, got.Status)
	require.False(t, got.Held())
	captured := c.Capture(ctx, provider.CaptureRequest{Key: req.Key + "-capture", ChargeID: got.ID, Amount: got.Amount, Currency: got.Currency})
	require.Equal(t, provider.Declined, captured.Outcome, captured.Detail)
	require.Equal(t, provider.DeclineHoldExpired, captured.DeclineCode)
	voided := c.Void(ctx, provider.VoidRequest{Key: req.Key + "-void", ChargeID: got.ID})
	require.Equal(t, provider.Declined, voided.Outcome, voided.Detail)
	require.Equal(t, provider.DeclineHoldExpired, voided.DeclineCode)
}
