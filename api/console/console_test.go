package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

// The chart sums only the paid attempts of its days, per currency, and
// scales each currency's bars to its own busiest day.
func TestPaidDays_SumsPaidAttemptsPerDayAndCurrency(t *testing.T) {
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	outcomes := []store.AttemptOutcome{
		{Day: since, Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 2, Minor: 10000},
		{Day: since, Provider: "b", Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 1, Minor: 5000},
		{Day: since, Provider: "a", Status: chargeonce.AttemptDeclined, Currency: "TRY", Count: 7, Minor: 99999},
		{Day: since.AddDate(0, 0, 2), Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "EUR", Count: 1, Minor: 250},
		// Outside the days: left out.
		{Day: since.AddDate(0, 0, 3), Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 1, Minor: 1},
		{Day: since.AddDate(0, 0, -1), Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 1, Minor: 1},
	}
	days, charts := paidDays(outcomes, since, 3)

	require.Equal(t, []dayFigures{
		{Day: since.AddDate(0, 0, 2), Paid: 1, Volume: []chargeonce.Money{{Minor: 250, Currency: "EUR"}}},
		{Day: since.AddDate(0, 0, 1)},
		{Day: since, Paid: 3, Volume: []chargeonce.Money{{Minor: 15000, Currency: "TRY"}}},
	}, days, "newest day first")

	require.Len(t, charts, 2)
	eur, try := charts[0], charts[1]
	require.Equal(t, "EUR", eur.Currency)
	require.Equal(t, chargeonce.Money{Minor: 250, Currency: "EUR"}, eur.Total)
	require.Equal(t, chargeonce.Money{Minor: 15000, Currency: "TRY"}, try.Peak)
	require.Len(t, try.Bars, 3)
	require.Equal(t, float64(ChartHeight-20), try.Bars[0].Height, "the busiest day fills the chart")
	require.Zero(t, try.Bars[1].Height)
	require.Equal(t, "2026-03-01: 150.00 TRY in 3 payments", try.Bars[0].Label)
	require.Less(t, try.Bars[0].X, try.Bars[1].X, "oldest day on the left")
}

// Each provider's shares count every attempt of the chart's days once.
func TestProviderShares_SplitOutcomesPerProvider(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	shares := providerShares([]store.AttemptOutcome{
		{Day: day, Provider: "b", Status: chargeonce.AttemptOpen, Currency: "TRY", Count: 2},
		{Day: day, Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "TRY", Count: 5},
		{Day: day.AddDate(0, 0, 1), Provider: "a", Status: chargeonce.AttemptSucceeded, Currency: "EUR", Count: 1},
		{Day: day, Provider: "a", Status: chargeonce.AttemptDeclined, Currency: "TRY", Count: 3},
		{Day: day, Provider: "a", Status: chargeonce.AttemptNotProcessed, Currency: "TRY", Count: 1},
	})
	require.Equal(t, []providerShare{
		{Provider: "a", Total: 10, Paid: 6, Declined: 3, Otherwise: 1},
		{Provider: "b", Total: 2, Unknown: 2},
	}, shares)
}

// The order search reads its fields as the API reads its own, and refuses
// the rest with a sentence.
func TestOrderQuery_ReadsTheSearchForm(t *testing.T) {
	q, err := orderQuery(url.Values{"id": {"1001"}, "status": {"paid"}, "from": {"2026-03-01"}, "to": {"2026-03-02"}, "reference": {"chargeonce-1001-x"}, "before": {"2000"}})
	require.NoError(t, err)
	require.Equal(t, store.OrderQuery{ID: 1001, Status: chargeonce.OrderPaid, Reference: "chargeonce-1001-x", Before: 2000, Limit: ordersPage,
		From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)}, q, "to names the last day searched")

	for form, want := range map[string]string{
		"id=0":                 "the order id must be a positive whole number",
		"id=abc":               "the order id must be a positive whole number",
		"before=-3":            "the before must be a positive whole number",
		"status=bogus":         `the status "bogus" is not an order status`,
		"from=2026-13-01":      "the date from must be written as 2026-03-14",
		"to=yesterday":         "the date to must be written as 2026-03-14",
		"reference=%E2%80%AEx": "the merchant reference must be text of at most 200 bytes",
	} {
		v, err := url.ParseQuery(form)
		require.NoError(t, err)
		_, err = orderQuery(v)
		require.EqualError(t, err, want, form)
	}
}

// The result of an action shows the answer's one-value fields, numbers as
// they were written.
func TestScalarFields_ShowOneValueFieldsByName(t *testing.T) {
	require.Equal(t, [][2]string{{"amount", "12.50"}, {"orderId", "1234567890"}, {"replayed", "false"}, {"status", "succeeded"}},
		scalarFields([]byte(`{"status":"succeeded","orderId":1234567890,"amount":"12.50","replayed":false,"requests":[{"key":"k"}],"hold":{"id":"h"}}`)))
	require.Nil(t, scalarFields([]byte(`not json`)))
}

// Over TLS, both of the console's cookies are Secure; each is HttpOnly,
// SameSite=Strict and the console's only, and the session's lasts
// SessionLength.
func TestSignIn_CookiesAreSecureOverTLS(t *testing.T) {
	st, err := store.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "console.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	key, rec, err := apikey.New("ops", []apikey.Scope{apikey.ScopeOperator}, time.Now())
	require.NoError(t, err)
	require.NoError(t, st.CreateAPIKey(t.Context(), rec))
	c, err := New(Config{Store: st, Act: func(http.ResponseWriter, *http.Request, apikey.Record) {
		t.Error("signing in goes through no API route")
	}})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(c)
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	resp, err := client.Get(srv.URL + Path + "/sign-in")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	form := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, form)
	signInCookies := resp.Cookies()
	require.Len(t, signInCookies, 1)
	requireConsoleCookie(t, signInCookies[0], signInCookie, time.Hour)

	req, err := http.NewRequest(http.MethodPost, srv.URL+Path+"/sign-in", strings.NewReader(url.Values{"csrf": {form[1]}, "key": {key.String()}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(signInCookies[0])
	resp, err = client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, Path, resp.Header.Get("Location"))
	for _, ck := range resp.Cookies() {
		if ck.Name == SessionCookie {
			requireConsoleCookie(t, ck, SessionCookie, SessionLength)
			return
		}
	}
	t.Fatal("signing in set no session cookie")
}

func requireConsoleCookie(t *testing.T, ck *http.Cookie, name string, maxAge time.Duration) {
	t.Helper()
	require.Equal(t, name, ck.Name)
	require.True(t, ck.Secure, "%s is Secure over TLS", name)
	require.True(t, ck.HttpOnly, name)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite, name)
	require.Equal(t, Path, ck.Path, name)
	require.Equal(t, int(maxAge/time.Second), ck.MaxAge, name)
}
