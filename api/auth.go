package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"chargeonce/api/wire"
	"chargeonce/internal/apikey"
)

// publicPaths answer without an API key: the health check, which load
// balancers call, the OpenAPI document, which holds no secret and which a
// merchant reads before it has a key, and the provider's events, which
// carry a signature of their own instead, at WebhookPath and under it
// (isPublic).
var publicPaths = map[string]bool{"/healthz": true, OpenAPIPath: true, WebhookPath: true}

// isPublic reports whether path answers without an API key: one of
// publicPaths, a path under WebhookPath, where each provider's signed
// events arrive (the route answers a name of no provider 404), or the
// operator's console, which signs its visitors in itself.
func isPublic(path string) bool {
	return publicPaths[path] || strings.HasPrefix(path, WebhookPath+"/") || isConsole(path)
}

// authTimeout bounds the key lookup of one request.
const authTimeout = 2 * time.Second

// requestInfo is what the request log learns from the handlers below it.
type requestInfo struct {
	// keyID is the id of the request's API key, once it is authenticated.
	keyID string
	// key is the authenticated key's record.
	key apikey.Record
	// via says where an audited action comes from, as the audit log
	// records it (store.AuditViaAPI or store.AuditViaConsole); empty is
	// the API.
	via string
}

type requestInfoKey struct{}

// infoOf returns the request's requestInfo, which logRequests puts in every
// request's context.
func infoOf(r *http.Request) *requestInfo {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return &requestInfo{}
	}
	return info
}

func withRequestInfo(r *http.Request) (*http.Request, *requestInfo) {
	info := &requestInfo{}
	return r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)), info
}

// authenticate answers 401 to every request without a working API key,
// except on publicPaths, before any route sees it: no route, not even a 404,
// answers a stranger.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isPublic(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), authTimeout)
		rec, err := apikey.Authenticate(ctx, s.store, r.Header.Get("Authorization"), time.Now())
		cancel()
		switch {
		case errors.Is(err, apikey.ErrMissing), errors.Is(err, apikey.ErrMalformed),
			errors.Is(err, apikey.ErrUnknown), errors.Is(err, apikey.ErrRevoked):
			w.Header().Set("WWW-Authenticate", `Bearer realm="chargeonce"`)
			writeProblem(w, s.log, wire.NewProblem(wire.ProblemAPIKeyRequired, err.Error()))
			return
		case err != nil:
			s.log.Error("API key lookup failed", "method", r.Method, "path", r.URL.Path, "error", err)
			s.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "the API key could not be checked: the database does not answer"})
			return
		}
		info := infoOf(r)
		info.keyID, info.key = rec.ID, rec
		next.ServeHTTP(w, r)
	})
}

// require serves next only to a key that holds scope, and answers 403 to
// any other.
func (s *server) require(scope apikey.Scope, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if key := infoOf(r).key; !key.Has(scope) {
			writeProblem(w, s.log, wire.NewProblem(wire.ProblemForbidden,
				"this request needs the scope "+string(scope)+"; the key "+key.ID+" holds "+apikey.FormatScopes(key.Scopes)))
			return
		}
		next(w, r)
	}
}
