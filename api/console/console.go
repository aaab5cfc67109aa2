// Package console serves the operator's console (docs/operations.md, "The
// operator's console"): server-rendered pages under Path that show what
// chargeonce leaves to a person, the settlement exceptions, unknown
// attempts, open refunds and failing event endpoints, and the forms that
// act on them.
//
// An operator signs in with an API key that holds the operator scope, or
// the viewer scope for reading only, and gets a session cookie. Pages read
// the store; every action is sent through the API's own routes (Config.Act)
// as the signed-in key, with an Idempotency-Key that the form carries, so
// that the API's rules, scopes and audit log apply to it as to any client.
// Nothing changes state by GET, and every form carries the session's CSRF
// token.
//
// The pages need no JavaScript: the charts are SVG drawn on the server, and
// the style sheet is served from the binary.
package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/internal/apikey"
	"chargeonce/store"
)

// Path is where the console is served; every page is under it.
const Path = "/console"

// SessionCookie names the cookie that holds a signed-in session's token.
const SessionCookie = "chargeonce_console"

// signInCookie holds the CSRF token of the sign-in form, which no session
// holds yet: the form must send the same value (double submit).
const signInCookie = "chargeonce_console_signin"

// SessionLength is how long a session lasts from sign-in.
const SessionLength = 8 * time.Hour

// maxForm bounds the body of a console form.
const maxForm = 64 << 10

// storeTimeout bounds the reads of one page.
const storeTimeout = 10 * time.Second

// Config configures the console.
type Config struct {
	// Store is the merchant database. Required.
	Store store.Store
	// Act serves r through the API's own routes as the key, as though the
	// key had sent it, and writes the API's answer to w. Required.
	Act func(w http.ResponseWriter, r *http.Request, key apikey.Record)
	// WebUI is the base URL of the Temporal Web UI, for the links to each
	// workflow; empty shows no link.
	WebUI string
	// Namespace is the Temporal namespace of the workflows.
	Namespace string
	// Providers names the providers whose books are settled, the default
	// first: a settlement day names no provider is the default's. Empty
	// means chargeonce.DefaultProvider alone.
	Providers []string
	// Logger receives what goes wrong; nil discards.
	Logger *slog.Logger
}

// Console serves the console's pages.
type Console struct {
	store     store.Store
	act       func(w http.ResponseWriter, r *http.Request, key apikey.Record)
	webUI     string
	namespace string
	providers []string
	log       *slog.Logger
	pages     map[string]*template.Template
	mux       *http.ServeMux
}

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed console.css
var styleSheet []byte

// New returns the console's handler, which serves every path under Path.
func New(cfg Config) (*Console, error) {
	if cfg.Store == nil || cfg.Act == nil {
		return nil, errors.New("console: config: Store and Act are required")
	}
	if cfg.WebUI != "" {
		u, err := url.Parse(cfg.WebUI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("console: config: the Temporal Web UI URL %q is not an http or https URL", cfg.WebUI)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	providers := cfg.Providers
	if len(providers) == 0 {
		providers = []string{chargeonce.DefaultProvider}
	}
	c := &Console{store: cfg.Store, act: cfg.Act, webUI: strings.TrimSuffix(cfg.WebUI, "/"), namespace: cfg.Namespace,
		providers: providers, log: cfg.Logger, pages: pages, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

// ServeHTTP serves one console request, with the headers that keep its
// pages out of caches and frames and forbid every script.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if _, pattern := c.mux.Handler(r); pattern == "" {
		c.renderError(w, r, nil, http.StatusNotFound, "There is no console page at "+r.URL.Path+".")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// visit is one signed-in request: its session and the key that signed in.
type visit struct {
	session store.Session
	key     apikey.Record
}

// CanAct reports whether the visit's key may act, not only read: the
// forms are shown to an operator only. The API checks each action's scope
// again.
func (v *visit) CanAct() bool { return v != nil && v.key.Has(apikey.ScopeOperator) }

// mayUseConsole reports whether a key may sign in.
func mayUseConsole(k apikey.Record) bool {
	return k.Has(apikey.ScopeOperator) || k.Has(apikey.ScopeViewer)
}

// signedIn serves next to a request of a live session whose key still
// works, and sends any other to the sign-in page, changing nothing. A POST
// must carry the session's CSRF token, or it is refused with 403.
func (c *Console) signedIn(next func(http.ResponseWriter, *http.Request, *visit)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
		defer cancel()
		v, why, err := c.lookUpSession(ctx, r)
		switch {
		case err != nil:
			c.log.Error("console session lookup failed", "error", err)
			c.renderError(w, r, nil, http.StatusServiceUnavailable, "The console cannot reach the database; try again shortly.")
			return
		case v == nil:
			clearCookie(w, r, SessionCookie)
			target := Path + "/sign-in"
			if why != "" {
				target += "?why=" + why
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				c.renderError(w, r, v, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if !sameToken(r.PostForm.Get("csrf"), v.session.CSRFToken) {
				c.renderError(w, r, v, http.StatusForbidden, "This form is stale or did not come from this console session, so nothing was changed. Reload the page and send it again.")
				return
			}
		}
		next(w, r, v)
	}
}

// Why a request was sent back to sign in.
const (
	whyExpired   = "expired"
	whySignedOut = "signed-out"
)

// lookUpSession returns the request's visit, or nil and why when it has
// none: no cookie, a session that ended or expired, or a key that was
// revoked or lost its scope since. A session that cannot last is ended.
func (c *Console) lookUpSession(ctx context.Context, r *http.Request) (*visit, string, error) {
	cookie, err := r.Cookie(SessionCookie)
	if err != nil || cookie.Value == "" {
		return nil, "", nil
	}
	hash := tokenHash(cookie.Value)
	s, err := c.store.Session(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, whyExpired, nil
	}
	if err != nil {
		return nil, "", err
	}
	now := time.Now()
	if !now.Before(s.ExpiresAt) {
		return nil, whyExpired, c.store.EndSession(ctx, hash)
	}
	key, err := c.store.APIKey(ctx, s.KeyID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!key.ActiveAt(now) || !mayUseConsole(key)) {
		return nil, whyExpired, c.store.EndSession(ctx, hash)
	}
	if err != nil {
		return nil, "", err
	}
	return &visit{session: s, key: key}, "", nil
}

// newToken returns 256 random bits, URL-safe.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokenHash is what the store keeps of a session token.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// sameToken compares a sent token with the expected one in constant time;
// an empty token matches nothing.
func sameToken(sent, want string) bool {
	return sent != "" && want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, scoped to
// Path, and Secure when the request came over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Path, MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: Path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// signInPage serves the sign-in form, with a fresh CSRF token in its
// cookie and in the form.
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.showSignIn(w, r, http.StatusOK, signInNotice(r.URL.Query().Get("why")))
}

func signInNotice(why string) string {
	switch why {
	case whyExpired:
		return "Your session has ended. Sign in again."
	case whySignedOut:
		return "You are signed out."
	}
	return ""
}

func (c *Console) showSignIn(w http.ResponseWriter, r *http.Request, status int, notice string) {
	token := newToken()
	setCookie(w, r, signInCookie, token, time.Hour)
	c.render(w, r, status, "sign-in", nil, "Sign in", map[string]any{"CSRF": token, "Notice": notice})
}

// signIn starts a session for a key that may use the console. A wrong,
// revoked or unfit key gets one answer, which does not say which it is.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		c.showSignIn(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	cookie, err := r.Cookie(signInCookie)
	if err != nil || !sameToken(r.PostForm.Get("csrf"), cookie.Value) {
		c.renderError(w, r, nil, http.StatusForbidden, "This sign-in form is stale or did not come from this console. Reload the page and sign in again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	now := time.Now()
	key, err := apikey.Authenticate(ctx, c.store, "Bearer "+strings.TrimSpace(r.PostForm.Get("key")), now)
	switch {
	case errors.Is(err, apikey.ErrMissing), errors.Is(err, apikey.ErrMalformed), errors.Is(err, apikey.ErrUnknown),
		errors.Is(err, apikey.ErrRevoked), err == nil && !mayUseConsole(key):
		c.log.Warn("console sign-in refused", "reason", refusal(key, err))
		c.showSignIn(w, r, http.StatusUnauthorized, "That key cannot sign in to the console.")
		return
	case err != nil:
		c.log.Error("console sign-in: API key lookup failed", "error", err)
		c.renderError(w, r, nil, http.StatusServiceUnavailable, "The console cannot reach the database; try again shortly.")
		return
	}
	token := newToken()
	s := store.Session{TokenHash: tokenHash(token), KeyID: key.ID, CSRFToken: newToken(), CreatedAt: now.UTC(), ExpiresAt: now.UTC().Add(SessionLength)}
	if err := c.store.CreateSession(ctx, s); err != nil {
		c.log.Error("console sign-in: store the session", "error", err)
		c.renderError(w, r, nil, http.StatusServiceUnavailable, "The console cannot reach the database; try again shortly.")
		return
	}
	clearCookie(w, r, signInCookie)
	setCookie(w, r, SessionCookie, token, SessionLength)
	c.audit(ctx, r, key, "console_sign_in", http.StatusSeeOther, "session until "+s.ExpiresAt.Format(time.RFC3339))
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// refusal says in the log, not to the visitor, why a sign-in was refused.
func refusal(key apikey.Record, err error) string {
	if err != nil {
		return err.Error()
	}
	return "the key " + key.ID + " holds neither the operator nor the viewer scope"
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, v *visit) {
	if err := c.store.EndSession(r.Context(), v.session.TokenHash); err != nil {
		c.log.Error("console sign-out: end the session", "error", err)
		c.renderError(w, r, v, http.StatusServiceUnavailable, "The console cannot reach the database; you are still signed in.")
		return
	}
	clearCookie(w, r, SessionCookie)
	c.audit(r.Context(), r, v.key, "console_sign_out", http.StatusSeeOther, "session ended")
	http.Redirect(w, r, Path+"/sign-in?why="+whySignedOut, http.StatusSeeOther)
}

// audit writes a console action that no API route serves, signing in and
// out, to the audit log.
func (c *Console) audit(ctx context.Context, r *http.Request, key apikey.Record, action string, status int, result string) {
	_, err := c.store.AppendAudit(ctx, store.AuditEntry{At: time.Now().UTC(), KeyID: key.ID, KeyName: key.Name, Via: store.AuditViaConsole,
		Action: action, Method: r.Method, Path: r.URL.Path, Status: status, Result: result})
	if err != nil {
		c.log.Error("console: the audit log did not take an entry", "action", action, "key", key.ID, "error", err)
	}
}

func serveStyle(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(styleSheet)
}
