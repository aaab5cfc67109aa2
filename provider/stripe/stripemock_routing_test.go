package stripe_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/provider/providertest"
	"chargeonce/provider/routing"
)

// The names of the two providers of routingFile.
const (
	fakeName       = "fake"
	stripeMockName = "stripe-mock"
)

// routingFile routes TRY up to 1000.00 to the fake first, larger TRY to
// stripe-mock first, and splits EUR's first choice 1:3. The fake's timeout
// is short, so that an exchange it never answers ends quickly, as a
// timeout.
const routingFile = `currencies: [TRY, EUR]

providers:
  - name: fake
    dialect: ietf
    url: %s
    timeout: 1s
  - name: stripe-mock
    dialect: stripe
    url: %s
    timeout: 10s
    api_key: sk_test_123
    search_delay: 0s

rules:
  - currencies: [TRY]
    max_amount: 100000
    providers: [fake, stripe-mock]
  - currencies: [TRY]
    min_amount: 100001
    providers: [stripe-mock, fake]
  - currencies: [EUR]
    providers: [fake, stripe-mock]
    weights: [1, 3]
`

// twoProviders is a deployment of routingFile: a fake provider speaking
// the IETF draft and stripe-mock, each on a loopback server of its own,
// and the registry the worker builds from the file.
type twoProviders struct {
	fake     *fakeprovider.Provider
	stripe   *stripeMockBooks
	table    *routing.Table
	registry provider.Registry
}

// startTwoProviders starts both providers, writes the routing file that
// names them, loads it, and builds the registry from it as the worker does
// (worker.Prepare): dialect.NewRegistry over the table's settings.
func startTwoProviders(t *testing.T) twoProviders {
	t.Helper()
	books := newStripeMockBooks(t, startStripeMock(t))
	fake, fakeURL := providertest.Serve(t, fakeprovider.Config{})
	path := filepath.Join(t.TempDir(), "routing.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, routingFile, fakeURL, books.url), 0o600))
	table, err := routing.Load(path)
	require.NoError(t, err)
	registry, err := dialect.NewRegistry(slog.New(slog.DiscardHandler), table.Settings()...)
	require.NoError(t, err)
	return twoProviders{fake: fake, stripe: books, table: table, registry: registry}
}

// port is the registry's port of the provider named name.
func (d twoProviders) port(t *testing.T, name string) provider.Port {
	t.Helper()
	p, err := d.registry.Get(name)
	require.NoError(t, err)
	return p
}

// mode puts the fake in m until the test ends.
func (d twoProviders) mode(t *testing.T, m fakeprovider.Mode) {
	t.Helper()
	require.NoError(t, d.fake.SetMode(m))
	t.Cleanup(func() { require.NoError(t, d.fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
}

// chargesOf are the fake's charges of the merchant reference.
func (d twoProviders) chargesOf(reference string) []fakeprovider.Charge {
	var charges []fakeprovider.Charge
	for _, c := range d.fake.Charges() {
		if c.MerchantReference == reference {
			charges = append(charges, c)
		}
	}
	return charges
}

// stripeMockRequest is a request that reached stripe-mock, and its answer.
type stripeMockRequest struct {
	Method, Path string
	// Key is the Idempotency-Key header, and Reference the form's
	// metadata[merchant_reference].
	Key, Reference string
	Status         int
}

// stripeMockBooks stands on loopback in front of stripe-mock, which keeps
// no books of what it is sent, and records each request on its way there.
type stripeMockBooks struct {
	url   string
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	got   []stripeMockRequest
}

func newStripeMockBooks(t *testing.T, stripeMockURL string) *stripeMockBooks {
	t.Helper()
	target, err := url.Parse(stripeMockURL)
	require.NoError(t, err)
	b := &stripeMockBooks{proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

func (b *stripeMockBooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	answer := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	b.proxy.ServeHTTP(answer, r)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, stripeMockRequest{
		Method: r.Method, Path: r.URL.Path,
		Key: r.Header.Get("Idempotency-Key"), Reference: form.Get("metadata[merchant_reference]"),
		Status: answer.status,
	})
}

// requests are the requests that reached stripe-mock, in the order they
// were answered.
func (b *stripeMockBooks) requests() []stripeMockRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.got)
}

// statusWriter remembers the status of the answer it writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// chargeFor is a charge of order for amount under key, its reference
// made of both, as the checkout makes it: every attempt, at every
// provider, has a key and a reference of its own.
func chargeFor(order int64, amount chargeonce.Money, key string) provider.ChargeRequest {
	return provider.ChargeRequest{
		Key: key, Amount: amount.Minor, Currency: amount.Currency, Source: "tok_visa",
		Description:       fmt.Sprintf("Bookstore order %d", order),
		MerchantReference: fmt.Sprintf("bookstore-%d-%s", order, key),
	}
}

// stripeCharge is what stripe-mock must have been sent for req.
func stripeCharge(req provider.ChargeRequest) stripeMockRequest {
	return stripeMockRequest{Method: http.MethodPost, Path: "/v1/payment_intents", Key: req.Key, Reference: req.MerchantReference, Status: http.StatusOK}
}

// requireStripeMockAnswer checks how the Stripe adapter read
// stripe-mock's answer to a charge: a valid request, answered 200 with a
// fixture of stripe-mock's own, a PaymentIntent waiting for a payment
// method, which is not the charge asked for. stripe-mock keeps no state,
// so it never answers with a succeeded charge of ours.
func requireStripeMockAnswer(t *testing.T, res provider.Result) {
	t.Helper()
	require.True(t, res.Sent)
	require.Equal(t, http.StatusOK, res.StatusCode, res.Detail)
	require.Equal(t, provider.ContractViolation, res.Outcome, "a fixture is not the charge asked for")
	require.Contains(t, res.Detail, `with a PaymentIntent that is not the one requested`)
}

// A routing file of two providers, one on stripe-mock, builds the registry
// the worker builds, whose ports each reach their own provider over HTTP;
// the rules order the providers as the file says; and the port's reading
// of an outcome decides whether a payment may move on to the next: only
// from one that charged nothing.
func TestRouting_TwoProvidersOneOnStripeMock(t *testing.T) {
	d := startTwoProviders(t)
	ctx := context.Background()
	small := chargeonce.Money{Minor: 2500, Currency: "TRY"}

	t.Run("each port reaches its own provider, with its key and reference", func(t *testing.T) {
		name, _ := d.registry.Default()
		require.Equal(t, fakeName, name, "the file's first provider is the default")
		atFake := chargeFor(1, small, "0b8f6a52-0d5c-4c5e-9a55-0c1f3f4d7a01")
		atStripe := chargeFor(1, small, "0b8f6a52-0d5c-4c5e-9a55-0c1f3f4d7a02")
		fakeRequests, stripeRequests := len(d.fake.Requests()), len(d.stripe.requests())

		paid := d.port(t, fakeName).Charge(ctx, atFake)
		requireStripeMockAnswer(t, d.port(t, stripeMockName).Charge(ctx, atStripe))

		require.Equal(t, provider.Approved, paid.Outcome, paid.Detail)
		charged := d.chargesOf(atFake.MerchantReference)
		require.Len(t, charged, 1)
		require.Equal(t, paid.ChargeID, charged[0].ID)
		require.Equal(t, atFake.Key, charged[0].IdempotencyKey)
		got := d.fake.Requests()[fakeRequests:]
		require.Len(t, got, 1, "the fake gets the IETF charge alone: %+v", got)
		require.Equal(t, "/v1/charges", got[0].Path)
		require.Equal(t, atFake.Key, got[0].Key)
		require.Equal(t, []stripeMockRequest{stripeCharge(atStripe)}, d.stripe.requests()[stripeRequests:],
			"stripe-mock gets the Stripe charge alone")
	})

	t.Run("the rules order the providers as the file gives them", func(t *testing.T) {
		r, err := d.table.Route(2, small)
		require.NoError(t, err)
		require.Equal(t, []string{fakeName, stripeMockName}, r.Providers)
		require.Equal(t, "rule 1 (line 16)", r.Why)
		r, err = d.table.Route(2, chargeonce.Money{Minor: 100001, Currency: "TRY"})
		require.NoError(t, err)
		require.Equal(t, []string{stripeMockName, fakeName}, r.Providers)
		require.Equal(t, "rule 2 (line 19)", r.Why)

		// EUR's first choice is split by the weights, one order in four to
		// the fake, and a charge at each first choice reaches that provider.
		eur := chargeonce.Money{Minor: 500, Currency: "EUR"}
		share, firstOrder := map[string]int{}, map[string]int64{}
		for order := int64(1); order <= 4000; order++ {
			r, err := d.table.Route(order, eur)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{fakeName, stripeMockName}, r.Providers, "the other provider follows")
			share[r.Providers[0]]++
			if firstOrder[r.Providers[0]] == 0 {
				firstOrder[r.Providers[0]] = order
			}
		}
		// 1:3 of 4000 is 1000 and 3000; a fair hash stays well within 10%.
		require.InDelta(t, 1000, share[fakeName], 100, "the fake's share: %v", share)
		require.InDelta(t, 3000, share[stripeMockName], 100, "stripe-mock's share: %v", share)
		stripeRequests := len(d.stripe.requests())
		toFake := chargeFor(firstOrder[fakeName], eur, "0b8f6a52-0d5c-4c5e-9a55-0c1f3f4d7a03")
		toStripe := chargeFor(firstOrder[stripeMockName], eur, "0b8f6a52-0d5c-4c5e-9a55-0c1f3f4d7a04")
		paid := d.port(t, fakeName).Charge(ctx, toFake)
		require.Equal(t, provider.Approved, paid.Outcome, paid.Detail)
		require.Len(t, d.chargesOf(toFake.MerchantReference), 1)
		requireStripeMockAnswer(t, d.port(t, stripeMockName).Charge(ctx, toStripe))
		require.Equal(t, []stripeMockRequest{stripeCharge(toStripe)}, d.stripe.requests()[stripeRequests:])
	})

	// The checkout moves a payment to the route's next provider only from
	// what the port reads as ClassNotProcessed, or as a decline for the
	// provider's own trouble (docs/design.md, "Failover").
	t.Run("nothing processed at the fake moves the payment to stripe-mock", func(t *testing.T) {
		cases := []struct {
			name   string
			mode   fakeprovider.Mode
			status int
			want   provider.Outcome
		}{
			{"503", fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, http.StatusServiceUnavailable, provider.Unavailable},
			{"429", fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}, http.StatusTooManyRequests, provider.RateLimited},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				d.mode(t, tc.mode)
				order := int64(10 + i)
				r, err := d.table.Route(order, small)
				require.NoError(t, err)
				first := chargeFor(order, small, fmt.Sprintf("5c3e0d8e-7f0a-4c1b-8e2d-%012d", 2*i))
				stripeRequests := len(d.stripe.requests())

				refused := d.port(t, r.Providers[0]).Charge(ctx, first)

				require.Equal(t, provider.ClassNotProcessed, refused.Class(), "%s: %s", refused.Outcome, refused.Detail)
				require.Equal(t, tc.want, refused.Outcome)
				require.True(t, refused.Sent, "the request reached the fake, which answered that it processed nothing")
				got := d.fake.Requests()
				require.Equal(t, first.Key, got[len(got)-1].Key)
				require.Equal(t, tc.status, got[len(got)-1].Status)
				require.Empty(t, d.chargesOf(first.MerchantReference))
				require.Empty(t, d.stripe.requests()[stripeRequests:])

				next := r.Providers[1]
				require.Equal(t, stripeMockName, next, "the route's next choice")
				moved := chargeFor(order, small, fmt.Sprintf("5c3e0d8e-7f0a-4c1b-8e2d-%012d", 2*i+1))
				requireStripeMockAnswer(t, d.port(t, next).Charge(ctx, moved))
				require.Equal(t, []stripeMockRequest{stripeCharge(moved)}, d.stripe.requests()[stripeRequests:],
					"the moved payment reaches stripe-mock under its own key and reference")
				require.Empty(t, d.chargesOf(moved.MerchantReference))
			})
		}
	})

	t.Run("a decline moves the payment only for the fake's own trouble", func(t *testing.T) {
		cases := []struct {
			card    string
			trouble bool
		}{
			{"tok_chargeDeclinedIssuerNotAvailable", true},
			{"tok_chargeDeclined", false},
		}
		for i, tc := range cases {
			t.Run(tc.card, func(t *testing.T) {
				req := chargeFor(int64(30+i), small, fmt.Sprintf("1e2d3c4b-5a69-4788-9a0b-%012d", i))
				req.Source = tc.card

				res := d.port(t, fakeName).Charge(ctx, req)

				require.Equal(t, provider.ClassDeclined, res.Class(), "%s: %s", res.Outcome, res.Detail)
				require.Equal(t, tc.trouble, res.ProviderTrouble)
			})
		}
	})

	t.Run("an unknown outcome at the fake stays there", func(t *testing.T) {
		cases := []struct {
			name string
			mode fakeprovider.Mode
			want provider.Outcome
			// charges is how many charges of the payment the fake holds,
			// which the port cannot know.
			charges int
		}{
			{"lost response", fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}, provider.TransportError, 1},
			{"no answer within the timeout", fakeprovider.Mode{Name: fakeprovider.ModeDrop}, provider.Timeout, 0},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				d.mode(t, tc.mode)
				order := int64(20 + i)
				r, err := d.table.Route(order, small)
				require.NoError(t, err)
				req := chargeFor(order, small, fmt.Sprintf("9d7c4b1a-2e3f-4a5b-8c6d-%012d", i))
				stripeRequests := len(d.stripe.requests())

				res := d.port(t, r.Providers[0]).Charge(ctx, req)

				require.Equal(t, provider.ClassUnknown, res.Class(), "%s: %s", res.Outcome, res.Detail)
				require.Equal(t, tc.want, res.Outcome)
				require.True(t, res.Sent)
				require.Len(t, d.chargesOf(req.MerchantReference), tc.charges, "the fake's books")
				require.Empty(t, d.stripe.requests()[stripeRequests:])
			})
		}
	})

	t.Run("an open breaker at the fake moves the payment to stripe-mock, whose breaker is its own", func(t *testing.T) {
		d.mode(t, fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1})
		r, err := d.table.Route(40, small)
		require.NoError(t, err)
		req := chargeFor(40, small, "6f5e4d3c-2b1a-4098-8f7e-6d5c4b3a2910")
		fake := d.port(t, r.Providers[0])
		// The key is sent again, as Temporal would, until the fake's
		// breaker opens on its 503s.
		for range 10 {
			res := fake.Charge(ctx, req)
			if res.Outcome == provider.BreakerOpen {
				break
			}
			require.Equal(t, provider.Unavailable, res.Outcome, res.Detail)
		}
		fakeRequests, stripeRequests := len(d.fake.Requests()), len(d.stripe.requests())

		held := fake.Charge(ctx, req)

		require.Equal(t, provider.BreakerOpen, held.Outcome, held.Detail)
		require.False(t, held.Sent)
		require.Equal(t, provider.ClassNotProcessed, held.Class())
		require.Len(t, d.fake.Requests(), fakeRequests, "the open breaker sent nothing")
		moved := chargeFor(40, small, "6f5e4d3c-2b1a-4098-8f7e-6d5c4b3a2911")
		requireStripeMockAnswer(t, d.port(t, r.Providers[1]).Charge(ctx, moved))
		require.Equal(t, []stripeMockRequest{stripeCharge(moved)}, d.stripe.requests()[stripeRequests:])
	})
}
