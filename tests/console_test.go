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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/api/console"
	"chargeonce/api/wire"
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
func browser(t *testing.T) *page {
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
	// The first call starts the browser, which lives as long as its
	// context: it takes no timeout of its own.
	require.NoError(t, chromedp.Do(ctx), "start chromium")
	return &page{t: t, ctx: ctx}
}

// page drives the browser's one tab; each step fails the test on an error,
// or after pageTimeout.
type page struct {
	t   *testing.T
	ctx context.Context
}

// pageTimeout bounds one step in the browser: a page to load, an element to
// show.
const pageTimeout = 30 * time.Second

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageTimeout)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, steps...))
}

// text is the text content of the first element that matches the CSS
// selector: what was written into it, exactly.
func (p *page) text(selector string) string {
	p.t.Helper()
	return run(p, chromedp.TextContent(chromedp.CSS(selector)))
}

func (p *page) location() string {
	p.t.Helper()
	return run(p, chromedp.Location())
}

func run[T any](p *page, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	require.NoError(p.t, err)
	return v
}

func css(selector string) chromedp.CSS { return chromedp.CSS(selector) }

// An operator signs in, finds a planted settlement exception on the
// overview and resolves it with a note, refunds an order from its page, and
// finds both in the audit log. Strangers and stale forms change nothing, and
// what customers and operators wrote is shown, never run.
func TestConsole_OperatorResolvesAnExceptionAndRefundsAnOrderInABrowser(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{})
	b := browser(t)
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
	// An event endpoint whose description is hostile; nothing listens at
	// its address.
	endpoint, err := json.Marshal(wire.CreateEndpointRequest{URL: "http://127.0.0.1:1/events", EventTypes: []string{}, Description: hostile})
	require.NoError(t, err)
	res, err = s.send(http.MethodPost, "/api/webhook-endpoints", string(endpoint))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "body: %s", res.body)

	// A signed-out visitor reaches no page: every one sends it to sign in.
	for _, path := range []string{"", "/orders", fmt.Sprintf("/orders/%d", id), "/settlements/" + today, "/audit", "/endpoints", "/refunds"} {
		b.do(chromedp.Navigate(base + path))
		require.Equal(t, base+"/sign-in", b.location(), "signed out, %s goes to sign-in: %s", path, b.text("body"))
	}

	// A wrong key, a revoked one and a malformed one get the same refusal.
	for _, key := range []string{"ck_0123456789abcdef_" + strings.Repeat("0", 64), storedKey(t, s.store, true, apikey.AllScopes()...), "not a key"} {
		b.do(chromedp.Navigate(base+"/sign-in"),
			chromedp.SendKeys(css(`input[name=key]`), key),
			chromedp.Click(css(`button[type=submit]`)),
			chromedp.WaitVisible(css(`p.notice`)))
		require.Equal(t, "That key cannot sign in to the console.", b.text(`p.notice`))
		require.Equal(t, base+"/sign-in", b.location())
	}

	// The operator signs in and finds the planted charge on the overview.
	b.do(chromedp.Navigate(base+"/sign-in"),
		chromedp.SendKeys(css(`input[name=key]`), s.apiKey),
		chromedp.Click(css(`button[type=submit]`)),
		chromedp.WaitVisible(css(`#open-exceptions`)))
	overview := b.text(`main`)
	require.Contains(t, overview, planted.ID)
	require.Contains(t, overview, "250.00 TRY", "today's paid volume")
	b.screenshot("console-overview.png")

	// It opens the exception and resolves it with a note.
	b.do(chromedp.Click(css(`tr.open-exception a`)), chromedp.WaitVisible(css(`div.exception`)))
	_, exceptionID, found := strings.Cut(b.location(), "#exception-")
	require.True(t, found, "the overview links the exception itself")
	form := `#exception-` + exceptionID + ` form[action$="/resolve"]`
	note := "Refunded by hand; " + hostile
	b.do(chromedp.SendKeys(css(form+` input[name=note]`), note),
		chromedp.Click(css(form+` button`)),
		chromedp.WaitVisible(css(`#result`)))
	require.Equal(t, "Resolution: the API answered 201.", b.text(`#result`))
	b.do(chromedp.Navigate(base + "/settlements/" + today))
	require.Contains(t, b.text(`#exception-`+exceptionID+` .resolution`), "Resolved by dev stack")
	require.Equal(t, note, b.text(`#exception-`+exceptionID+` .note`), "the note is shown as it was written")
	resolutions, err := s.store.ExceptionResolutions(t.Context(), chargeonce.DefaultProvider, today)
	require.NoError(t, err)
	require.Equal(t, note, resolutions[exceptionID].Note)

	// It refunds part of the order from the order's page.
	b.do(chromedp.Navigate(fmt.Sprintf("%s/orders/%d", base, id)))
	require.Equal(t, hostile, b.text(`#description`), "the description is shown as text")
	b.screenshot("console-order.png")
	b.do(chromedp.SendKeys(css(`#refund-form input[name=amount]`), "40.00"),
		chromedp.SendKeys(css(`#refund-form input[name=reason]`), hostile),
		chromedp.Click(css(`#refund-form button`)),
		chromedp.WaitVisible(css(`#result`)))
	require.Equal(t, "Refund: the API answered 200, status succeeded.", b.text(`#result`))
	b.do(chromedp.Navigate(fmt.Sprintf("%s/orders/%d", base, id)))
	require.Equal(t, hostile, b.text(`#refunds tr.refund td.reason`))
	require.Equal(t, "partially_refunded", s.order(t, id).Status)

	// Both actions are in the audit log, as the console's, under the key.
	b.do(chromedp.Navigate(base + "/audit"))
	actions := run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.audit-entry td.action")].map(e => e.textContent)`))
	require.Equal(t, []string{"refund_order", "resolve_exception", "console_sign_in", "create_endpoint", "run_settlement"}, actions)
	audit := b.text(`main`)
	require.Contains(t, audit, fmt.Sprintf("POST /api/orders/%d/refunds", id))
	require.Contains(t, audit, "POST /api/settlements/"+today+"/exceptions/"+exceptionID+"/resolve")

	// What someone wrote was shown as text on every page, never parsed:
	// the pages hold no script and no image.
	b.do(chromedp.Navigate(base + "/endpoints"))
	require.Equal(t, hostile, b.text(`td.description`))
	for _, path := range []string{fmt.Sprintf("/orders/%d", id), "/settlements/" + today, "/audit", "/orders", "/endpoints"} {
		b.do(chromedp.Navigate(base + path))
		require.Zero(t, run(b, chromedp.Evaluate[int](`document.querySelectorAll("script, img").length`)), "%s parsed what someone wrote", path)
	}

	// Signing out in the browser sends it to sign in.
	b.do(chromedp.Click(css(`header form button`)), chromedp.WaitVisible(css(`input[name=key]`)))
	require.Equal(t, base+"/sign-in?why=signed-out", b.location())
	b.do(chromedp.Navigate(base))
	require.Equal(t, base+"/sign-in", b.location())

	// The same over plain HTTP: the session cookie is HttpOnly,
	// SameSite=Strict and the console's only.
	h := signIn(t, base, s.apiKey)
	require.True(t, h.cookie.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, h.cookie.SameSite)
	require.Equal(t, console.Path, h.cookie.Path)

	// A search field is checked before anything is read.
	got := h.send(t, http.MethodGet, base+"/orders?status=bogus", nil)
	require.Equal(t, http.StatusBadRequest, got.status)
	require.Contains(t, got.body, "the status &#34;bogus&#34; is not an order status")

	// A viewer reads and cannot act: its pages carry no form, and an
	// action sent anyway is refused by the API's own scope check. That,
	// a sign-in form without its cookie, and a form without the session's
	// CSRF token or with a stale one change nothing.
	viewer := signIn(t, base, storedKey(t, s.store, false, apikey.ScopeViewer))
	got = viewer.send(t, http.MethodGet, fmt.Sprintf("%s/orders/%d", base, id), nil)
	require.Equal(t, http.StatusOK, got.status)
	require.Contains(t, got.body, "read only")
	require.NotContains(t, got.body, `id="refund-form"`)
	refundsBefore, err := s.store.OrderRefunds(t.Context(), id)
	require.NoError(t, err)
	auditBefore, err := s.store.AuditLog(t.Context(), 0, store.MaxAuditPage)
	require.NoError(t, err)
	got = viewer.send(t, http.MethodPost, fmt.Sprintf("%s/orders/%d/refund", base, id),
		url.Values{"csrf": {viewer.csrf}, "reason": {"viewer"}, "idempotency_key": {"5f0c1a7e-9d2b-4c3e-8f6a-1b2c3d4e5f60"}})
	require.Equal(t, http.StatusForbidden, got.status)
	require.Contains(t, got.body, "this request needs the scope refund")

	// The sign-in form is checked too: without its cookie, it is refused.
	got = httpSession{}.send(t, http.MethodPost, base+"/sign-in", url.Values{"csrf": {"guess"}, "key": {s.apiKey}})
	require.Equal(t, http.StatusForbidden, got.status)

	for _, csrf := range []string{"", "stale-" + strings.Repeat("x", 40)} {
		form := url.Values{"amount": {"1.00"}, "reason": {"forged"}, "idempotency_key": {"0b9b6c38-2b1e-4d8e-9c55-5d6a0f3c1e11"}}
		if csrf != "" {
			form.Set("csrf", csrf)
		}
		got := h.send(t, http.MethodPost, fmt.Sprintf("%s/orders/%d/refund", base, id), form)
		require.Equal(t, http.StatusForbidden, got.status, "csrf %q", csrf)
	}
	refundsAfter, err := s.store.OrderRefunds(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, refundsBefore, refundsAfter, "a forged form refunds nothing")
	auditAfter, err := s.store.AuditLog(t.Context(), 0, store.MaxAuditPage)
	require.NoError(t, err)
	require.Equal(t, auditBefore, auditAfter, "a forged form is not an action")

	// A session that expired goes back to sign-in, and ends.
	expired := "expired-session-token"
	hash := sha256.Sum256([]byte(expired))
	now := time.Now().UTC()
	require.NoError(t, s.store.CreateSession(t.Context(), store.Session{TokenHash: hex.EncodeToString(hash[:]), KeyID: strings.Split(s.apiKey, "_")[1],
		CSRFToken: "t", CreatedAt: now.Add(-9 * time.Hour), ExpiresAt: now.Add(-time.Hour)}))
	got = httpSession{cookie: &http.Cookie{Name: console.SessionCookie, Value: expired}}.send(t, http.MethodGet, base+"/orders", nil)
	require.Equal(t, http.StatusSeeOther, got.status)
	require.Equal(t, console.Path+"/sign-in?why=expired", got.location)
	_, err = s.store.Session(t.Context(), hex.EncodeToString(hash[:]))
	require.ErrorIs(t, err, store.ErrNotFound)

	// A session signed out reaches no page again.
	got = h.send(t, http.MethodPost, base+"/sign-out", url.Values{"csrf": {h.csrf}})
	require.Equal(t, http.StatusSeeOther, got.status)
	require.Equal(t, console.Path+"/sign-in?why=signed-out", got.location)
	for _, path := range []string{"", fmt.Sprintf("/orders/%d", id), "/audit"} {
		got := h.send(t, http.MethodGet, base+path, nil)
		require.Equal(t, http.StatusSeeOther, got.status, path)
		require.Equal(t, console.Path+"/sign-in?why=expired", got.location, path)
	}
}

// httpSession is a console session signed in over plain HTTP.
type httpSession struct {
	cookie *http.Cookie
	csrf   string
}

// csrfField finds a form's CSRF token in a page.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn signs in with key as the sign-in page's form does.
func signIn(t *testing.T, base, key string) httpSession {
	t.Helper()
	resp, err := noRedirects.Get(base + "/sign-in")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	m := csrfField.FindStringSubmatch(string(body))
	require.NotNil(t, m, "the sign-in form carries a CSRF token")
	req, err := http.NewRequest(http.MethodPost, base+"/sign-in", strings.NewReader(url.Values{"csrf": {m[1]}, "key": {key}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	resp, err = noRedirects.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var h httpSession
	for _, c := range resp.Cookies() {
		if c.Name == console.SessionCookie && c.Value != "" {
			h.cookie = c
		}
	}
	require.NotNil(t, h.cookie, "signing in sets the session cookie")
	req, err = http.NewRequest(http.MethodGet, base, nil)
	require.NoError(t, err)
	req.AddCookie(h.cookie)
	resp, err = noRedirects.Do(req)
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	m = csrfField.FindStringSubmatch(string(body))
	require.NotNil(t, m, "every page's forms carry the session's CSRF token")
	h.csrf = m[1]
	return h
}

// answer is a console page as plain HTTP gets it, redirects not followed.
type answer struct {
	status   int
	location string
	body     string
}

// send sends the form, if any, with the session's cookie, if any.
func (h httpSession) send(t *testing.T, method, target string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if h.cookie != nil {
		req.AddCookie(h.cookie)
	}
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, location: resp.Header.Get("Location"), body: string(body)}
}

// storedKey stores a key with these scopes, revoked a minute ago if
// revoked is true, and returns it.
func storedKey(t *testing.T, st store.Store, revoked bool, scopes ...apikey.Scope) string {
	t.Helper()
	k, rec, err := apikey.New("console test", scopes, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	if revoked {
		at := time.Now().Add(-time.Minute)
		rec.RevokedAt = &at
	}
	require.NoError(t, st.CreateAPIKey(t.Context(), rec))
	return k.String()
}

// noRedirects is an HTTP client that shows redirects instead of following
// them.
var noRedirects = &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// screenshot writes the page to the -console-screenshots directory, when
// the flag names one.
func (p *page) screenshot(name string) {
	p.t.Helper()
	if *consoleScreenshots == "" {
		return
	}
	png := run(p, chromedp.FullScreenshot(100))
	require.NoError(p.t, os.WriteFile(filepath.Join(*consoleScreenshots, name), png, 0o644))
}
