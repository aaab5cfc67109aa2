// Package activitiestest runs the payment and refund activities against
// real parts, for tests and for the program that records the workflows'
// histories: the fake provider's handler behind an httptest server, provider
// clients, and a SQLite store in a directory of the caller's.
package activitiestest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// ReferencePrefix starts the merchant references of the intents built here.
const ReferencePrefix = "shop"

// Options configures an Env.
type Options struct {
	// Fake configures the fake provider; the zero value is normal mode.
	Fake fakeprovider.Config
	// Breaker configures the provider clients' circuit breakers; the zero
	// value is the client's default.
	Breaker provider.BreakerConfig
	// API is the dialect the clients speak to the fake, dialect.IETF or
	// dialect.Stripe; empty means IETF.
	API string
	// ProviderName names the fake in the activities' provider registry and
	// in the attempts and refunds stored here; empty means
	// chargeonce.DefaultProvider.
	ProviderName string
	// Middleware, when set, wraps the fake's handler, for tests that act
	// between a request's arrival and its answer.
	Middleware func(fake *fakeprovider.Provider, next http.Handler) http.Handler
	// Logger receives the activities' and the clients' logs; nil discards
	// them.
	Logger *slog.Logger
}

// SlowProvider configures a provider that takes longer to charge than a
// request waits: the first request of a key times out while its charge goes
// on, and the charge is finished exactly when the provider answers a retry of
// the key with 409. The sequence timeout, 409, replay then happens whatever
// the real clock does, which a test clock that skips time cannot otherwise
// promise.
func SlowProvider() Options {
	release := make(chan time.Time)
	var once sync.Once
	return Options{
		Fake: fakeprovider.Config{
			Mode:  fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: time.Hour},
			After: func(time.Duration) <-chan time.Time { return release },
		},
		Middleware: func(fake *fakeprovider.Provider, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sw := &statusWriter{ResponseWriter: w}
				next.ServeHTTP(sw, r)
				if sw.status == http.StatusConflict {
					once.Do(func() { close(release) })
					// The 409 is held back until the charge is stored, so the
					// next request of the key gets the replay.
					_ = fake.Wait(r.Context())
				}
			})
		},
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// CardHasher keys the card hashes of the intents an Env creates, as the
// checkout API's would be; a fresh key each run.
var CardHasher = func() chargeonce.CardHasher {
	h, err := chargeonce.ParseCardHashKey(chargeonce.NewCardHashKey())
	if err != nil {
		panic(err)
	}
	return h
}()

// Env is a fake provider, provider clients and a SQLite store, wired into an
// activities.Activities.
type Env struct {
	// Fake is the fake provider; tests set its mode and read its charges
	// and request log.
	Fake *fakeprovider.Provider
	// Client is a provider client of the fake, separate from the one the
	// activities use, for acting on the provider directly.
	Client provider.Port
	// Store is the SQLite store the activities write to.
	Store store.Store
	// Activities are the activities under test.
	Activities *activities.Activities
	// Settlement are the settlement activities, on the same fake and store.
	Settlement *activities.Settlement

	srv          *httptest.Server
	transports   []*http.Transport
	providerName string

	mu sync.Mutex
	// keys are the Idempotency-Key headers of the POSTs, by path.
	keys map[string][]string
}

// New starts an Env in a temporary directory and closes it when the test
// ends. Under go test -v, the logs go to stderr.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Logger == nil && testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	e, err := Start(context.Background(), opts, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, e.Close(ctx))
	})
	return e
}

// Start starts the fake provider and opens a fresh SQLite store in dir.
// Close releases both.
func Start(ctx context.Context, opts Options, dir string) (*Env, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	fake, err := fakeprovider.New(opts.Fake)
	if err != nil {
		return nil, fmt.Errorf("fake provider: %w", err)
	}
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "chargeonce.db"))
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	e := &Env{Fake: fake, Store: st, keys: map[string][]string{}}
	var handler http.Handler = fake
	if opts.Middleware != nil {
		handler = opts.Middleware(fake, handler)
	}
	e.srv = httptest.NewServer(e.recordKeys(handler))
	clients := make([]*provider.Breaker, 2)
	for i := range clients {
		// Each client has its own connections, so that what is done through
		// Client never shares a connection with the activities.
		transport := &http.Transport{}
		e.transports = append(e.transports, transport)
		clients[i], err = dialect.New(dialect.Config{
			Settings:   fakeprovider.DialectSettings(opts.API, e.srv.URL),
			HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: transport},
			Breaker:    opts.Breaker,
			Logger:     logger,
		})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("provider client: %w", err), e.Close(ctx))
		}
	}
	e.Client = clients[0]
	e.providerName = cmp.Or(opts.ProviderName, chargeonce.DefaultProvider)
	providers, err := provider.Single(e.providerName, clients[1])
	if err != nil {
		return nil, errors.Join(err, e.Close(ctx))
	}
	e.Activities = &activities.Activities{Providers: providers, Store: st, Logger: logger}
	e.Settlement = &activities.Settlement{
		Reports: map[string]*settlement.Client{e.providerName: {BaseURL: e.srv.URL, HTTP: &http.Client{Transport: e.transports[1]}}},
		Default: e.providerName,
		Store:   st,
		Logger:  logger,
	}
	return e, nil
}

// Close releases the requests the fake holds, stops its server and closes
// the store.
func (e *Env) Close(ctx context.Context) error {
	err := e.Fake.Close(ctx)
	for _, tr := range e.transports {
		tr.CloseIdleConnections()
	}
	e.srv.Close()
	return errors.Join(err, e.Store.Close())
}

// recordKeys keeps the raw Idempotency-Key header of every charge and
// refund request, exactly as it arrived on the wire.
func (e *Env) recordKeys(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			e.mu.Lock()
			e.keys[r.URL.Path] = append(e.keys[r.URL.Path], r.Header.Get("Idempotency-Key"))
			e.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// ChargeKeys returns the raw Idempotency-Key header of every charge request
// the provider received, oldest first.
func (e *Env) ChargeKeys() []string {
	return e.postedKeys("/v1/charges")
}

// RefundKeys returns the raw Idempotency-Key header of every refund request
// the provider received, oldest first.
func (e *Env) RefundKeys() []string {
	return e.postedKeys("/v1/refunds")
}

func (e *Env) postedKeys(path string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.keys[path]...)
}

// CreateIntent stores an order for amount and starts its attempt for the
// card token at createdAt, as the checkout does, and returns the payment
// intent.
func (e *Env) CreateIntent(ctx context.Context, token string, amount chargeonce.Money, createdAt time.Time) (chargeonce.PaymentIntent, error) {
	return e.createIntent(ctx, token, amount, createdAt, "", "")
}

// CreateHeldIntent is CreateIntent for a checkout of a manual capture,
// whose deadline makes the move of onDeadline (empty: a void).
func (e *Env) CreateHeldIntent(ctx context.Context, token string, amount chargeonce.Money, createdAt time.Time, onDeadline chargeonce.DeadlineAction) (chargeonce.PaymentIntent, error) {
	return e.createIntent(ctx, token, amount, createdAt, chargeonce.CaptureManual, onDeadline)
}

// NewHeldIntent is CreateHeldIntent for tests.
func (e *Env) NewHeldIntent(t testing.TB, token string, amount chargeonce.Money, createdAt time.Time, onDeadline chargeonce.DeadlineAction) chargeonce.PaymentIntent {
	t.Helper()
	intent, err := e.CreateHeldIntent(context.Background(), token, amount, createdAt, onDeadline)
	require.NoError(t, err)
	return intent
}

// createIntent stores an order and its attempt, of the capture mode and
// deadline action given, and returns the attempt's intent.
func (e *Env) createIntent(ctx context.Context, token string, amount chargeonce.Money, createdAt time.Time, capture chargeonce.CaptureMode, onDeadline chargeonce.DeadlineAction) (chargeonce.PaymentIntent, error) {
	order, err := e.Store.CreateOrder(ctx, amount, "Bookstore order")
	if err != nil {
		return chargeonce.PaymentIntent{}, err
	}
	key, err := uuid.NewV7()
	if err != nil {
		return chargeonce.PaymentIntent{}, err
	}
	_, att, decision, err := e.Store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID:         order.ID,
		CardHash:        CardHasher.Hash(token),
		Key:             key.String(),
		ReferencePrefix: ReferencePrefix,
		Now:             createdAt,
		AbandonAfter:    30 * time.Minute,
		Provider:        e.providerName,
		Capture:         capture,
		OnDeadline:      onDeadline,
	})
	if err != nil {
		return chargeonce.PaymentIntent{}, err
	}
	if decision != store.DecisionCreated {
		return chargeonce.PaymentIntent{}, fmt.Errorf("new order %d: attempt %s, want %s", order.ID, decision, store.DecisionCreated)
	}
	intent := chargeonce.PaymentIntent{
		Key:               att.Key,
		OrderID:           order.ID,
		Amount:            amount,
		CardToken:         token,
		CardHash:          att.CardHash,
		CardHashKeyed:     att.CardHashKeyed,
		MerchantReference: att.MerchantReference,
		Description:       order.Description,
		CreatedAt:         att.CreatedAt,
		Provider:          att.Provider,
		Capture:           capture,
		OnDeadline:        onDeadline,
	}
	return intent, intent.Validate()
}

// NewIntent is CreateIntent for tests.
func (e *Env) NewIntent(t testing.TB, token string, amount chargeonce.Money, createdAt time.Time) chargeonce.PaymentIntent {
	t.Helper()
	intent, err := e.CreateIntent(context.Background(), token, amount, createdAt)
	require.NoError(t, err)
	return intent
}

// ChargeBehindTheBack makes the provider process a charge of the intent
// whose answer never arrives: the worst case, charged with an unknown
// outcome. The fake is in normal mode afterwards.
func (e *Env) ChargeBehindTheBack(ctx context.Context, intent chargeonce.PaymentIntent) error {
	return e.answerLost(func() provider.Outcome {
		return e.Client.Charge(ctx, provider.ChargeRequestOf(intent)).Outcome
	})
}

// RefundBehindTheBack makes the provider process the refund whose answer
// never arrives, as ChargeBehindTheBack does for a charge.
func (e *Env) RefundBehindTheBack(ctx context.Context, intent chargeonce.RefundIntent) error {
	return e.answerLost(func() provider.Outcome {
		return e.Client.Refund(ctx, provider.RefundRequestOf(intent)).Outcome
	})
}

// CaptureBehindTheBack makes the provider process the capture of the move
// whose answer never arrives, as ChargeBehindTheBack does for a charge.
func (e *Env) CaptureBehindTheBack(ctx context.Context, m chargeonce.MoveIntent) error {
	return e.answerLost(func() provider.Outcome {
		return e.Client.Capture(ctx, provider.CaptureRequest{Key: m.Key, ChargeID: m.ChargeID, Amount: m.Amount.Minor, Currency: m.Amount.Currency}).Outcome
	})
}

// answerLost sends a request with send while the fake loses every answer.
func (e *Env) answerLost(send func() provider.Outcome) error {
	if err := e.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}); err != nil {
		return err
	}
	outcome := send()
	if err := e.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}); err != nil {
		return err
	}
	if outcome != provider.TransportError {
		return fmt.Errorf("request with a lost answer: got %s, want %s", outcome, provider.TransportError)
	}
	return nil
}

// CreatePaidIntent is CreateIntent for an order that its attempt paid: the
// provider charged the card, and the attempt settled succeeded with that
// charge, whose id it returns too.
func (e *Env) CreatePaidIntent(ctx context.Context, token string, amount chargeonce.Money, createdAt time.Time) (chargeonce.PaymentIntent, string, error) {
	intent, err := e.CreateIntent(ctx, token, amount, createdAt)
	if err != nil {
		return intent, "", err
	}
	res := e.Client.Charge(ctx, provider.ChargeRequestOf(intent))
	if res.Outcome != provider.Approved {
		return intent, "", fmt.Errorf("charge of a paid order: got %s (%s), want %s", res.Outcome, res.Detail, provider.Approved)
	}
	if _, err := e.Store.SettleAttempt(ctx, intent.Key, chargeonce.AttemptSucceeded, res.ChargeID, createdAt); err != nil {
		return intent, "", err
	}
	return intent, res.ChargeID, nil
}

// NewPaidIntent is CreatePaidIntent for tests.
func (e *Env) NewPaidIntent(t testing.TB, token string, amount chargeonce.Money, createdAt time.Time) (chargeonce.PaymentIntent, string) {
	t.Helper()
	intent, chargeID, err := e.CreatePaidIntent(context.Background(), token, amount, createdAt)
	require.NoError(t, err)
	return intent, chargeID
}

// CreateRefund stores a merchant's refund of minor units (0: all that the
// charge can still refund) of the paid order's charge at createdAt, as the
// refund API does, and returns its intent.
func (e *Env) CreateRefund(ctx context.Context, orderID, minor int64, createdAt time.Time) (chargeonce.RefundIntent, error) {
	key, err := uuid.NewV7()
	if err != nil {
		return chargeonce.RefundIntent{}, err
	}
	requestKey, err := uuid.NewRandom()
	if err != nil {
		return chargeonce.RefundIntent{}, err
	}
	r, decision, err := e.Store.StartRefund(ctx, store.NewRefund{
		OrderID:            orderID,
		Amount:             minor,
		Reason:             "requested_by_customer",
		Origin:             chargeonce.RefundByMerchant,
		Key:                key.String(),
		ReferencePrefix:    ReferencePrefix,
		RequestKey:         requestKey.String(),
		RequestFingerprint: fmt.Sprintf("%x", sha256.Sum256([]byte(requestKey.String()))),
		Now:                createdAt,
	})
	if err != nil {
		return chargeonce.RefundIntent{}, err
	}
	if decision != store.RefundCreated {
		return chargeonce.RefundIntent{}, fmt.Errorf("new refund of order %d: %s, want %s", orderID, decision, store.RefundCreated)
	}
	return r.RefundIntent, r.RefundIntent.Validate()
}

// NewRefund is CreateRefund for tests.
func (e *Env) NewRefund(t testing.TB, orderID, minor int64, createdAt time.Time) chargeonce.RefundIntent {
	t.Helper()
	intent, err := e.CreateRefund(context.Background(), orderID, minor, createdAt)
	require.NoError(t, err)
	return intent
}

// Refund reads the refund back from the store.
func (e *Env) Refund(t testing.TB, key string) store.Refund {
	t.Helper()
	r, err := e.Store.GetRefund(context.Background(), key)
	require.NoError(t, err)
	return r
}

// Attempt reads the attempt back from the store.
func (e *Env) Attempt(t testing.TB, key string) store.Attempt {
	t.Helper()
	att, err := e.Store.GetAttempt(context.Background(), key)
	require.NoError(t, err)
	return att
}

// Quoted is the key as a Structured Field String, the form the contract
// requires on the wire.
func Quoted(key string) string {
	return `"` + key + `"`
}
