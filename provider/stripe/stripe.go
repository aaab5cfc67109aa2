// Package stripe is the provider adapter of Stripe's PaymentIntents API, on
// the official library, github.com/stripe/stripe-go.
//
// A refund is a Refund of the PaymentIntent under the refund's own key,
// found again by listing the PaymentIntent's refunds (refund.go). A charge
// is a PaymentIntent created with confirm=true, the card's
// payment_method and metadata[merchant_reference], under the attempt's
// idempotency key. A charge whose outcome was lost is found again through
// the Search API by that metadata. A hold is a PaymentIntent created with
// capture_method=manual, captured or canceled under the capture's or the
// void's own key (hold.go): Stripe's requires_capture is authorized,
// canceled with the cancellation_reason automatic is expired, canceled
// otherwise is voided, and succeeded has amount_received captured. The
// library's own network retries are off: one activity attempt is one
// request, and Temporal's retry policy, with the same key, is the only
// retry. Like every adapter it has no circuit breaker of its own:
// provider.Breaker stands in front of it.
//
// Stripe's answers map to the port's outcomes as follows:
//
//   - 200 with a succeeded PaymentIntent that matches the request: Approved;
//   - card_error: Declined, with the decline_code (or the error code, such
//     as expired_card, when Stripe sends no decline code), and the
//     PaymentIntent it left when there is one: a result, not our problem.
//     It is ProviderTrouble when the code is one of
//     provider.IsProviderTrouble's (issuer_not_available, processing_error,
//     reenter_transaction, try_again_later), the trouble of Stripe, the
//     acquirer or the issuer rather than the card's;
//   - 400 invalid_request_error resource_missing on payment_method ("No
//     such PaymentMethod"): Declined with
//     provider.DeclineInvalidPaymentMethod, nothing processed: the card the
//     customer gave is not one Stripe can charge;
//   - 409 idempotency_key_in_use: InFlight, an earlier request with the key
//     is still being processed;
//   - 400 idempotency_error: ContractViolation, the key was reused with other
//     parameters, a bug on our side that no retry can fix;
//   - to a capture or a cancel, 400 amount_too_large, and 400
//     payment_intent_unexpected_state read by the state of the
//     PaymentIntent it shows: Declined with the port's hold decline code;
//   - any other 400, and 401, 403: InvalidRequest, nothing processed;
//   - 429: RateLimited, nothing processed, since Stripe's rate limiter runs
//     before its idempotency layer;
//   - 5xx: Unavailable, the outcome unknown: Stripe may have processed the
//     request, and says so only to a retry with the same key;
//   - a refused connection: TransportError, nothing sent;
//   - a timeout or a connection lost after sending: Timeout or
//     TransportError, the outcome unknown.
package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripeapi "github.com/stripe/stripe-go/v84"

	"chargeonce"
	"chargeonce/provider"
)

// KeyRetention is how long Stripe keeps an idempotency key: keys may be
// pruned once they are 24 hours old, and a request with a pruned key is a
// new request.
const KeyRetention = 24 * time.Hour

// SearchDelay is how long after a PaymentIntent is created Stripe's Search
// API may still miss it. Stripe documents search as eventually consistent,
// typically within a minute, and not guaranteed during an outage; this is
// the one place that says so.
const SearchDelay = time.Minute

// DefaultLookupsPerSecond is how many searches a second the lookups are paced
// to when Config.LookupsPerSecond is zero: Stripe's search rate limit in live
// mode, shared by every client of the account.
const DefaultLookupsPerSecond = 20

// HoldWindow is how long Stripe keeps the authorization of an online card
// payment captured manually: it cancels the PaymentIntent, with the
// cancellation_reason automatic, once seven days have passed.
const HoldWindow = 7 * 24 * time.Hour

// DefaultBaseURL is Stripe's API.
const DefaultBaseURL = stripeapi.APIURL

// maxKeyLength is the longest idempotency key Stripe accepts.
const maxKeyLength = 255

// metadataReference is the metadata key under which the merchant reference
// travels and is searched for.
const metadataReference = "merchant_reference"

// Config configures a Client.
type Config struct {
	// APIKey is the secret key, sk_test_… for test mode or sk_live_….
	APIKey string
	// BaseURL is the API's root; empty means DefaultBaseURL. Point it at a
	// stand-in (stripe-mock, the fake provider's Stripe dialect) in tests.
	BaseURL string
	// HTTPClient sends the requests; it must have a positive Timeout. The
	// Client never follows redirects.
	HTTPClient *http.Client
	// LookupsPerSecond paces the lookups; zero means
	// DefaultLookupsPerSecond.
	LookupsPerSecond float64
	// LookupDelay is how long search may lag behind a new PaymentIntent:
	// SearchDelay against Stripe; zero for a stand-in whose search reads
	// its books at once.
	LookupDelay time.Duration
}

// Client speaks Stripe's PaymentIntents API; it implements provider.Port.
// It is safe for concurrent use.
type Client struct {
	api    *stripeapi.Client
	limits provider.Limits
}

var _ provider.Port = (*Client)(nil)

// New checks cfg and builds a Client.
func New(cfg Config) (*Client, error) {
	if !strings.HasPrefix(cfg.APIKey, "sk_test_") && !strings.HasPrefix(cfg.APIKey, "sk_live_") {
		return nil, errors.New("stripe: the API key must be a secret key, sk_test_… or sk_live_…")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := provider.CheckHTTP(cfg.BaseURL, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("stripe: %w", err)
	}
	switch {
	case cfg.LookupsPerSecond < 0:
		return nil, fmt.Errorf("stripe: Config.LookupsPerSecond %v is negative", cfg.LookupsPerSecond)
	case cfg.LookupDelay < 0:
		return nil, fmt.Errorf("stripe: Config.LookupDelay %v is negative", cfg.LookupDelay)
	}
	rate := cfg.LookupsPerSecond
	if rate == 0 {
		rate = DefaultLookupsPerSecond
	}
	hc := *cfg.HTTPClient
	hc.Transport = &recorder{next: transportOf(cfg.HTTPClient)}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	backend := stripeapi.GetBackendWithConfig(stripeapi.APIBackend, &stripeapi.BackendConfig{
		URL:               stripeapi.String(strings.TrimSuffix(base.String(), "/")),
		HTTPClient:        &hc,
		MaxNetworkRetries: stripeapi.Int64(0),
		// The activities log every exchange with its outcome; the library's
		// own lines would tell each one twice.
		LeveledLogger: &stripeapi.LeveledLogger{Level: stripeapi.LevelNull},
	})
	api := stripeapi.NewClient(cfg.APIKey, stripeapi.WithBackends(&stripeapi.Backends{
		API: backend, Connect: backend, Uploads: backend, MeterEvents: backend,
	}))
	return &Client{
		api:    api,
		limits: provider.Limits{KeyRetention: KeyRetention, LookupsPerSecond: rate, LookupDelay: cfg.LookupDelay, HoldWindow: HoldWindow},
	}, nil
}

func transportOf(hc *http.Client) http.RoundTripper {
	if hc.Transport == nil {
		return http.DefaultTransport
	}
	return hc.Transport
}

// Limits returns Stripe's documented limits; it sends nothing, since Stripe
// publishes them in its documentation rather than through its API.
func (c *Client) Limits(context.Context) (provider.Limits, error) {
	return c.limits, nil
}

// Charge creates and confirms a PaymentIntent for req under its key and
// reads the answer. It never returns an error: every answer, and the lack
// of one, is an Outcome in the Result. A hold (req.Hold) is created with
// capture_method=manual, and approved as authorized once Stripe answers
// requires_capture.
func (c *Client) Charge(ctx context.Context, req provider.ChargeRequest) provider.Result {
	params := &stripeapi.PaymentIntentCreateParams{
		Amount:        stripeapi.Int64(req.Amount),
		Currency:      stripeapi.String(strings.ToLower(req.Currency)),
		Confirm:       stripeapi.Bool(true),
		PaymentMethod: stripeapi.String(req.Source),
		// A card charged from the server, with no customer present: a card
		// that asks for authentication is declined rather than left
		// waiting for a customer who will not come.
		PaymentMethodTypes:    []*string{stripeapi.String("card")},
		ErrorOnRequiresAction: stripeapi.Bool(true),
		Metadata:              map[string]string{metadataReference: req.MerchantReference},
	}
	if req.Description != "" {
		params.Description = stripeapi.String(req.Description)
	}
	if req.Hold {
		params.CaptureMethod = stripeapi.String(string(stripeapi.PaymentIntentCaptureMethodManual))
		// The card's capture_before is on the PaymentIntent's charge.
		params.AddExpand(expandCharge)
	}
	params.SetIdempotencyKey(req.Key)

	var r provider.Result
	r.Exchange = create(ctx, check(req), func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.api.V1PaymentIntents.Create(ctx, params)
	}, func(pi *stripeapi.PaymentIntent) endpoint {
		return chargeEndpoint(req, pi, &r)
	})
	return r
}

// check refuses, before anything is sent, a request Stripe would refuse: a
// bug on our side is then a clear InvalidRequest with Sent false.
func check(req provider.ChargeRequest) error {
	switch {
	case req.Source == "":
		return errors.New("payment method (card token) is empty")
	case req.MerchantReference == "":
		return errors.New("merchant reference is empty")
	}
	return checkKeyAndMoney(req.Key, req.Amount, req.Currency)
}

// checkKeyAndMoney refuses a key Stripe would refuse and an amount that is
// no money.
func checkKeyAndMoney(key string, amount int64, currency string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	_, err := chargeonce.NewMoney(amount, currency)
	return err
}

// checkKey refuses an idempotency key Stripe would refuse.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("idempotency key is empty")
	case len(key) > maxKeyLength:
		return fmt.Errorf("idempotency key has %d characters, more than %d", len(key), maxKeyLength)
	}
	return nil
}

// chargeEndpoint reads the answers to the creation of pi for req into r.
func chargeEndpoint(req provider.ChargeRequest, pi *stripeapi.PaymentIntent, r *provider.Result) endpoint {
	return endpoint{
		object: "PaymentIntent",
		created: func() (provider.Outcome, error) {
			ch, err := approved(req, pi)
			if err != nil {
				return "", err
			}
			r.Charge, r.ChargeID = &ch, ch.ID
			return provider.Approved, nil
		},
		refusal: func(e *stripeapi.Error) (refused, ok bool) {
			switch {
			case e.Type == stripeapi.ErrorTypeCard:
				// A card error is about the customer's card whatever its
				// status and whether or not it names the PaymentIntent it
				// left.
				r.DeclineCode, r.ChargeID = declined(e)
				r.ProviderTrouble = provider.IsProviderTrouble(r.DeclineCode)
				return false, true
			case resourceMissing(e, "payment_method"):
				// "No such PaymentMethod": the payment method the customer
				// gave does not exist for this account. Stripe checks it
				// before it creates anything, so nothing was processed.
				r.DeclineCode = provider.DeclineInvalidPaymentMethod
				return true, true
			}
			return false, false
		},
	}
}

// endpoint is what one creation knows of its own answers. Each reader keeps
// what it decoded for the endpoint's result.
type endpoint struct {
	// object names what a 200 carries, for the logs.
	object string
	// created reads the object of a 200: Approved, or Declined when Stripe
	// created it as failed. An error means it is not the object that was
	// asked for, which breaks the contract.
	created func() (provider.Outcome, error)
	// refusal reads the error answers that are a Declined result of this
	// endpoint, and whether Stripe processed nothing; ok is false for any
	// other error, which the shared reading classifies.
	refusal func(e *stripeapi.Error) (refused, ok bool)
}

// create sends one creation through call, recording what went over the
// wire, and reads its answer into an Exchange as the endpoint built from the
// created object says: the one reading of status, Idempotent-Replayed,
// error types and transport errors for PaymentIntents and refunds alike,
// since Stripe's idempotency layer, rate limiter and error types are the
// same for both. Only the object of a 200 and the errors that are results
// (a declined card, a refund Stripe will not make) are the endpoint's own.
// invalid is what the endpoint found wrong with the request, if anything:
// such a request is InvalidRequest and not sent. Nothing is sent once ctx
// has ended either.
func create[T any](ctx context.Context, invalid error, call func(context.Context) (T, error), e func(T) endpoint) provider.Exchange {
	if invalid != nil {
		return provider.Exchange{Outcome: provider.InvalidRequest, Detail: "not sent: " + invalid.Error()}
	}
	if err := ctx.Err(); err != nil {
		return provider.Exchange{Outcome: provider.Timeout, Detail: "not sent: " + err.Error()}
	}
	ctx, ex := record(ctx)
	start := time.Now()
	obj, err := call(ctx)
	x := classify(ctx, ex, err, e(obj))
	x.Sent = ex.sent
	if x.Sent {
		x.Duration = time.Since(start)
	}
	return x
}

// classify reads the answer to a creation.
func classify(ctx context.Context, ex *exchange, err error, e endpoint) provider.Exchange {
	x := provider.Exchange{StatusCode: ex.status, Replayed: ex.replayed()}
	var serr *stripeapi.Error
	switch {
	case err == nil:
		outcome, cerr := e.created()
		if cerr != nil {
			x.Outcome, x.Detail = provider.ContractViolation, fmt.Sprintf("HTTP %d with a %s that is not the one requested: %v", ex.status, e.object, cerr)
			break
		}
		x.Outcome = outcome
	case errors.As(err, &serr):
		x.StatusCode, x.Detail = serr.HTTPStatusCode, describe(serr)
		if refused, ok := e.refusal(serr); ok {
			x.Outcome, x.Refused = provider.Declined, refused
		} else {
			x.Outcome, x.Refused = errorOutcome(serr)
		}
	case ex.status != 0:
		// An answer arrived but the library could not read it: an HTML
		// page from a gateway, a body cut short.
		x.Outcome, x.Detail = statusOutcome(ex.status), fmt.Sprintf("HTTP %d without a readable Stripe answer: %v", ex.status, err)
	default:
		x.Outcome, x.Detail = provider.TransportOutcome(ctx, err), err.Error()
	}
	return x
}

// errorOutcome reads one of Stripe's error answers that no endpoint reads
// as its own result, and whether Stripe documents it as processing
// nothing.
func errorOutcome(e *stripeapi.Error) (outcome provider.Outcome, refused bool) {
	switch {
	case e.HTTPStatusCode == http.StatusConflict:
		return provider.InFlight, false
	case e.HTTPStatusCode == http.StatusBadRequest && e.Type == stripeapi.ErrorTypeIdempotency:
		return provider.ContractViolation, false
	}
	outcome = statusOutcome(e.HTTPStatusCode)
	return outcome, outcome == provider.InvalidRequest || outcome == provider.RateLimited
}

// resourceMissing reports Stripe's "No such …" for param.
func resourceMissing(e *stripeapi.Error, param string) bool {
	return e.HTTPStatusCode == http.StatusBadRequest && e.Type == stripeapi.ErrorTypeInvalidRequest &&
		e.Code == stripeapi.ErrorCodeResourceMissing && e.Param == param
}

// declined reads the decline code of a declined card and the PaymentIntent
// it left, if any. A card error without a decline code carries its error
// code instead, such as expired_card, or processing_error, which
// provider.IsProviderTrouble reads as a decline code: Stripe's codes are the
// common ones. A card error without a code of its own says only that the
// card was declined.
func declined(e *stripeapi.Error) (code, chargeID string) {
	if e.PaymentIntent != nil {
		chargeID = e.PaymentIntent.ID
	}
	switch {
	case e.DeclineCode != "":
		code = string(e.DeclineCode)
	case e.Code != "":
		code = string(e.Code)
	default:
		code = string(stripeapi.ErrorCodeCardDeclined)
	}
	return code, chargeID
}

// statusOutcome reads a status whose meaning does not depend on the body.
func statusOutcome(status int) provider.Outcome {
	switch {
	case status == http.StatusBadRequest, status == http.StatusUnauthorized, status == http.StatusForbidden:
		return provider.InvalidRequest
	case status == http.StatusNotFound:
		return provider.NotFound
	case status == http.StatusTooManyRequests:
		return provider.RateLimited
	case status >= 500 && status <= 599:
		return provider.Unavailable
	}
	return provider.ContractViolation
}

// describe summarises an error answer for logs.
func describe(e *stripeapi.Error) string {
	msg := fmt.Sprintf("HTTP %d %s", e.HTTPStatusCode, e.Type)
	if e.Code != "" {
		msg += " " + string(e.Code)
	}
	if e.DeclineCode != "" {
		msg += " (" + string(e.DeclineCode) + ")"
	}
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	return msg
}

// approved checks that a PaymentIntent is the succeeded charge that was
// asked for: a success for another amount or another reference would settle
// the payment on a charge that is not ours.
func approved(req provider.ChargeRequest, pi *stripeapi.PaymentIntent) (provider.Charge, error) {
	ch, err := charge(pi)
	want := provider.StatusSucceeded
	if req.Hold {
		want = provider.StatusAuthorized
	}
	switch {
	case err != nil:
		return provider.Charge{}, err
	case ch.Status != want:
		return provider.Charge{}, fmt.Errorf("PaymentIntent %s has status %q, want the port's %q", pi.ID, pi.Status, want)
	case ch.Amount != req.Amount || ch.Currency != req.Currency:
		return provider.Charge{}, fmt.Errorf("amount %d %s, want %d %s", ch.Amount, ch.Currency, req.Amount, req.Currency)
	case ch.MerchantReference != req.MerchantReference:
		return provider.Charge{}, fmt.Errorf("metadata[%s] %q, want %q", metadataReference, ch.MerchantReference, req.MerchantReference)
	}
	ch.IdempotencyKey = req.Key
	return ch, nil
}

// errInFlight marks a PaymentIntent that is still processing: whether it
// succeeds is not known yet.
var errInFlight = errors.New("still processing")

// charge reads a PaymentIntent as a charge. A PaymentIntent that is still
// processing is errInFlight; one in a state that a confirmed card payment of
// this adapter never reaches is an error. A hold (capture_method=manual)
// carries what was captured of it and, when its charge is expanded, when it
// expires.
func charge(pi *stripeapi.PaymentIntent) (provider.Charge, error) {
	if pi == nil || pi.ID == "" {
		return provider.Charge{}, errors.New("PaymentIntent without an id")
	}
	status, err := statusOf(pi)
	if err != nil {
		return provider.Charge{}, err
	}
	if pi.Amount <= 0 || pi.Currency == "" {
		return provider.Charge{}, fmt.Errorf("PaymentIntent %s: amount %d %q is not a positive amount in a currency", pi.ID, pi.Amount, pi.Currency)
	}
	ch := provider.Charge{
		ID:                pi.ID,
		Status:            status,
		Currency:          strings.ToUpper(string(pi.Currency)),
		MerchantReference: pi.Metadata[metadataReference],
		Amount:            pi.Amount,
		Created:           time.Unix(pi.Created, 0).UTC(),
	}
	if held(pi) {
		ch.AmountCaptured = pi.AmountReceived
		if c := pi.LatestCharge; c != nil && c.PaymentMethodDetails != nil && c.PaymentMethodDetails.Card != nil && c.PaymentMethodDetails.Card.CaptureBefore > 0 {
			ch.CaptureBefore = time.Unix(c.PaymentMethodDetails.Card.CaptureBefore, 0).UTC()
		}
	}
	return ch, nil
}

// held reports whether the PaymentIntent was created as a hold.
func held(pi *stripeapi.PaymentIntent) bool {
	return pi.CaptureMethod == stripeapi.PaymentIntentCaptureMethodManual
}

// statusOf maps the status of a PaymentIntent to the port's.
func statusOf(pi *stripeapi.PaymentIntent) (string, error) {
	switch pi.Status {
	case stripeapi.PaymentIntentStatusSucceeded:
		return provider.StatusSucceeded, nil
	case stripeapi.PaymentIntentStatusRequiresCapture:
		return provider.StatusAuthorized, nil
	case stripeapi.PaymentIntentStatusCanceled:
		if !held(pi) {
			// This adapter cancels nothing but holds: a canceled
			// PaymentIntent captured at once never charged the card.
			return provider.StatusFailed, nil
		}
		// Stripe cancels a hold that was not captured in time itself.
		if pi.CancellationReason == stripeapi.PaymentIntentCancellationReasonAutomatic {
			return provider.StatusExpired, nil
		}
		return provider.StatusVoided, nil
	case stripeapi.PaymentIntentStatusRequiresPaymentMethod:
		// A confirmation that failed leaves the PaymentIntent waiting for
		// another payment method; this adapter never sends one, so the
		// charge has failed for good.
		return provider.StatusFailed, nil
	case stripeapi.PaymentIntentStatusProcessing:
		return "", fmt.Errorf("PaymentIntent %s: %w", pi.ID, errInFlight)
	}
	return "", fmt.Errorf("PaymentIntent %s has status %q, which a confirmed card payment without customer action never has", pi.ID, pi.Status)
}
