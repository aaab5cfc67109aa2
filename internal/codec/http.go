package codec

import (
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// maxRequestBytes bounds a codec request body. Temporal refuses payloads over
// 2 MiB by default, and the Web UI sends the payloads of one field at a time.
const maxRequestBytes = 8 << 20

// NewHTTPHandler serves the remote codec protocol the Temporal Web UI and CLI
// speak: POST {"payloads":[...]} to a path ending in /decode or /encode, and
// get the payloads back decoded or encoded.
//
// The Web UI calls it from the browser, so requests whose Origin header is one
// of allowedOrigins (exact match, such as "http://127.0.0.1:8233") get CORS
// headers, and their preflight is answered. A request from any other origin is
// refused with 403; one without an Origin header (the CLI, curl) is served.
//
// Whoever holds the token can decrypt every payload and encrypt anything
// with the current key, so every POST must carry it, in one of two forms:
//
//   - "Authorization: Bearer <token>", as the Temporal CLI sends it with
//     --codec-auth "Bearer <token>";
//   - a path prefix, POST /<token>/decode, for the Temporal Web UI, whose
//     browser code can send no header of ours: its codec endpoint is
//     configured as <codec URL>/<token>. Whoever can read the UI's
//     settings learns the token that way; they could read every payload
//     through the UI anyway.
//
// A request without the token, or with another, gets 401 and nothing is
// decoded. Preflights carry no credentials in any browser, so they are
// answered without, for allowed origins only; they reveal nothing.
func NewHTTPHandler(k *Keyring, token Token, allowedOrigins ...string) http.Handler {
	return &httpHandler{
		codec:   converter.NewPayloadCodecHTTPHandler(NewCodec(k)),
		token:   token,
		origins: slices.Clone(allowedOrigins),
	}
}

type httpHandler struct {
	codec   http.Handler
	token   Token
	origins []string
}

// authorized reports whether r carries the token, and strips the token's
// path prefix from r when that is how it came.
func (h *httpHandler) authorized(r *http.Request) bool {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, cred, _ := strings.Cut(auth, " ")
		return strings.EqualFold(scheme, "Bearer") && h.token.matches(strings.TrimSpace(cred))
	}
	cred, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || !h.token.matches(cred) {
		return false
	}
	r.URL.Path, r.URL.RawPath = "/"+rest, ""
	return true
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	if origin := r.Header.Get("Origin"); origin != "" {
		if !slices.Contains(h.origins, origin) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
	}
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		if !h.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="codec"`)
			http.Error(w, "the codec needs its token: Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		if r.ContentLength > maxRequestBytes {
			http.Error(w, http.StatusText(http.StatusRequestEntityTooLarge), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		h.codec.ServeHTTP(w, r)
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
	}
}
