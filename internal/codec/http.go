package codec

import (
	"net/http"
	"slices"

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
// Whoever reaches this handler can decrypt every payload: bind it to loopback
// or put it behind authentication.
func NewHTTPHandler(k *Keyring, allowedOrigins ...string) http.Handler {
	return &httpHandler{
		codec:   converter.NewPayloadCodecHTTPHandler(NewCodec(k)),
		origins: slices.Clone(allowedOrigins),
	}
}

type httpHandler struct {
	codec   http.Handler
	origins []string
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
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
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
