package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"chargeonce/api/console"
	"chargeonce/fakeprovider"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

var consoleScreenshots = flag.String("console-screenshots", "", "write the console's screenshots (overview, order page) into this `directory`, as docs/images holds them")

// hostile is text that a customer or an operator may write, which every page
// must show as text and never run.
const hostile = `<script>document.title="pwned"</script><img src=x onerror=alert(1)>`

// browser starts a headless Chromium driven over the DevTools protocol, and
// stops it when the test ends. CI installs Chromium; elsewhere, without it,
// the test is skipped.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and CI must run the console's browser test: .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium), so the console is not checked in a browser")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	ctx, cancelRun := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelRun)
	require.NoError(t, chromedp.Run(ctx), "start chromium")
	return ctx
}

// An operator signs in, finds a planted settlement exception on the
// overview and resolves it with a note, refunds an order from its page, and
// finds both in the audit log. Strangers and stale forms change nothing, and
// what customers and operators wrote is shown, never run.
func TestConsole_OperatorResolvesAnExceptionAndRefundsAnOrderInABrowser(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{})
	ctx := browser(t)
	base := s.apiURL + console.Path

	// An order whose description is hostile, paid; and a charge at the
	// provider that no attempt made, which the settlement finds.
	res, err := s.send(http.MethodPost, "/api/orders", fmt.Sprintf(`{"amount": "250.00", "currency": "TRY", "description": %q}`, hostile))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "body: %s", res.body)
	var created orderView
	require.NoError(t, json.Unmarshal(res.body, &created))
	id := created.ID
	require.Equal(t, http.StatusOK, s.checkout(t, id, "tok_visa").status)
	planted, err := s.provider.PlantCharge(fakeprovider.PlantedCharge{Amount: 9900, Currency: "TRY", MerchantReference: "stranger", Status: fakeprovider.ChargeSucceeded})
	require.NoError(t, err)
	today := time.Now().UTC().Format(time.DateOnly)
	s.runSettlement(t, today)

	// A signed-out visitor reaches no page: every one sends it to sign in.
	var loc string
	for _, page := range []string{"/", "/orders", fmt.Sprintf("/orders/%d", id), "/settlements/" + today, "/audit", "/endpoints", "/refunds"} {
		require.NoError(t, chromedp.Run(ctx, chromedp.Navigate(base+page), chromedp.Location(&loc)))
		require.Equal(t, base+"/sign-in", loc, "signed out, %s goes to sign-in", page)
	}

	// A wrong key and a revoked one get the same refusal.
	revoked := revokedKey(t, s.store)
	for _, key := range []string{"ck_0123456789abcdef_" + strings.Repeat("0", 64), revoked, "not a key"} {
		var notice string
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(base+"/sign-in"),
			chromedp.SendKeys(`input[name=key]`, key, chromedp.ByQuery),
			chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`p.notice`, chromedp.ByQuery),
			chromedp.Text(`p.notice`, &notice, chromedp.ByQuery),
			chromedp.Location(&loc),
		))
		require.Equal(t, "That key cannot sign in to the console.", notice)
		require.Equal(t, base+"/sign-in", loc)
	}

	// The operator signs in and finds the planted charge on the overview.
	var overview string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/sign-in"),
		chromedp.SendKeys(`input[name=key]`, s.apiKey, chromedp.ByQuery),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#open-exceptions`, chromedp.ByQuery),
		chromedp.Text(`main`, &overview, chromedp.ByQuery),
	))
	require.Contains(t, overview, planted.ID)
	require.Contains(t, overview, "250.00 TRY", "today's paid volume")
	screenshot(t, ctx, "console-overview.png")

	// It opens the exception and resolves it with a note.
	note := "Refunded by hand; " + hostile
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`tr.open-exception a`, chromedp.ByQuery),
		chromedp.WaitVisible(`div.exception`, chromedp.ByQuery),
		chromedp.Location(&loc),
	))
	_, exceptionID, found := strings.Cut(loc, "#exception-")
	require.True(t, found, "the overview links the exception itself: %s", loc)
	form := `#exception-` + exceptionID + ` form[action$="/resolve"]`
	var result string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(form+` input[name=note]`, note, chromedp.ByQuery),
		chromedp.Click(form+` button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#result`, chromedp.ByQuery),
		chromedp.Text(`#result`, &result, chromedp.ByQuery),
	))
	require.Equal(t, "Resolution: the API answered 201.", result)
	var shown string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/settlements/"+today),
		chromedp.Text(`#exception-`+exceptionID+` .resolution`, &shown, chromedp.ByQuery),
	))
	require.Contains(t, shown, "Resolved by dev stack")
	require.Contains(t, shown, note, "the note is shown as it was written")
	resolutions, err := s.store.ExceptionResolutions(t.Context(), today)
	require.NoError(t, err)
	require.Equal(t, note, resolutions[exceptionID].Note)

	// It refunds part of the order from the order's page.
	var description string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/orders/%d", base, id)),
		chromedp.Text(`#description`, &description, chromedp.ByQuery),
	))
	require.Equal(t, hostile, description, "the description is shown as text")
	screenshot(t, ctx, "console-order.png")
	require.NoError(t, chromedp.Run(ctx,
		chromedp.SendKeys(`#refund-form input[name=amount]`, "40.00", chromedp.ByQuery),
		chromedp.SendKeys(`#refund-form input[name=reason]`, hostile, chromedp.ByQuery),
		chromedp.Click(`#refund-form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#result`, chromedp.ByQuery),
		chromedp.Text(`#result`, &result, chromedp.ByQuery),
	))
	require.Equal(t, "Refund: the API answered 201, status succeeded.", result)
	var reason string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/orders/%d", base, id)),
		chromedp.Text(`#refunds tr.refund td.reason`, &reason, chromedp.ByQuery),
	))
	require.Equal(t, hostile, reason)
	require.Equal(t, "partially_refunded", s.order(t, id).Status)

	// Both actions are in the audit log, as the console's, under the key.
	var actions []string
	var audit string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/audit"),
		chromedp.Evaluate(`[...document.querySelectorAll("tr.audit-entry td.action")].map(e => e.textContent)`, &actions),
		chromedp.Text(`main`, &audit, chromedp.ByQuery),
	))
	require.Equal(t, []string{"refund_order", "resolve_exception", "console_sign_in", "run_settlement"}, actions)
	require.Contains(t, audit, fmt.Sprintf("POST /api/orders/%d/refunds", id))
	require.Contains(t, audit, "POST /api/settlements/"+today+"/exceptions/"+exceptionID+"/resolve")

	// The hostile text was shown as text on every page, never parsed: the
	// pages hold no script and no image.
	for _, page := range []string{fmt.Sprintf("/orders/%d", id), "/settlements/" + today, "/audit", "/orders"} {
		var elements int
		require.NoError(t, chromedp.Run(ctx,
			chromedp.Navigate(base+page),
			chromedp.Evaluate(`document.querySelectorAll("script, img").length`, &elements),
		))
		require.Zero(t, elements, "%s parsed what someone wrote", page)
	}

	// A form sent without the session's CSRF token, or with a stale one,
	// is refused and changes nothing.
	session := sessionCookie(t, ctx)
	refundsBefore, err := s.store.OrderRefunds(t.Context(), id)
	require.NoError(t, err)
	for _, csrf := range []string{"", "stale-" + strings.Repeat("x", 40)} {
		form := url.Values{"amount": {"1.00"}, "reason": {"forged"}, "idempotency_key": {"0b9b6c38-2b1e-4d8e-9c55-5d6a0f3c1e11"}}
		if csrf != "" {
			form.Set("csrf", csrf)
		}
		status, _ := postForm(t, fmt.Sprintf("%s/orders/%d/refund", base, id), session, form)
		require.Equal(t, http.StatusForbidden, status, "csrf %q", csrf)
	}
	refundsAfter, err := s.store.OrderRefunds(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, refundsBefore, refundsAfter, "a forged form refunds nothing")
	entries, err := s.store.AuditLog(t.Context(), 0, store.MaxAuditPage)
	require.NoError(t, err)
	require.Len(t, entries, 4, "a forged form is not an action")

	// An expired session goes back to sign-in, and ends.
	expired := "expired-session-token"
	hash := sha256.Sum256([]byte(expired))
	now := time.Now().UTC()
	require.NoError(t, s.store.CreateSession(t.Context(), store.Session{TokenHash: hex.EncodeToString(hash[:]), KeyID: strings.Split(s.apiKey, "_")[1],
		CSRFToken: "t", CreatedAt: now.Add(-9 * time.Hour), ExpiresAt: now.Add(-time.Hour)}))
	status, where := get(t, base+"/orders", &http.Cookie{Name: console.SessionCookie, Value: expired})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, console.Path+"/sign-in?why=expired", where)
	_, err = s.store.Session(t.Context(), hex.EncodeToString(hash[:]))
	require.ErrorIs(t, err, store.ErrNotFound)

	// Signing out ends the session: its cookie reaches no page again.
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click(`header form button`, chromedp.ByQuery),
		chromedp.WaitVisible(`input[name=key]`, chromedp.ByQuery),
		chromedp.Location(&loc),
	))
	require.Equal(t, base+"/sign-in?why=signed-out", loc)
	status, where = get(t, base+"/", session)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, console.Path+"/sign-in?why=expired", where)
}

// revokedKey stores a key with every scope that was revoked a minute ago,
// and returns it.
func revokedKey(t *testing.T, st store.Store) string {
	t.Helper()
	k, rec, err := apikey.New("revoked", apikey.AllScopes(), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	at := time.Now().Add(-time.Minute)
	rec.RevokedAt = &at
	require.NoError(t, st.CreateAPIKey(t.Context(), rec))
	return k.String()
}

// sessionCookie is the browser's console session cookie.
func sessionCookie(t *testing.T, ctx context.Context) *http.Cookie {
	t.Helper()
	var cookies []*network.Cookie
	require.NoError(t, chromedp.Run(ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().Do(ctx)
		return err
	})))
	for _, c := range cookies {
		if c.Name == console.SessionCookie {
			require.True(t, c.HTTPOnly, "the session cookie is HttpOnly")
			require.Equal(t, network.CookieSameSiteStrict, c.SameSite)
			require.Equal(t, console.Path, c.Path)
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatal("the browser holds no console session cookie")
	return nil
}

// noRedirects is an HTTP client that shows redirects instead of following
// them.
var noRedirects = &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func postForm(t *testing.T, target string, cookie *http.Cookie, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	return do(t, req)
}

func get(t *testing.T, target string, cookie *http.Cookie) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	req.AddCookie(cookie)
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// screenshot writes the page to the -console-screenshots directory, when
// the flag names one.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *consoleScreenshots == "" {
		return
	}
	var png []byte
	require.NoError(t, chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)))
	require.NoError(t, os.WriteFile(filepath.Join(*consoleScreenshots, name), png, 0o644))
}
