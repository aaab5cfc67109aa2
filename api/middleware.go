package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"chargeonce/api/wire"
	"chargeonce/internal/alert"
)

// statusRecorder remembers the status of a response for the request log and
// for panic recovery.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests logs one line per request: method, path, status, duration,
// and the id of the API key that made it (never the key), empty when none
// was authenticated.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		r, info := withRequestInfo(r)
		next.ServeHTTP(rec, r)
		s.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds(), "key_id", info.keyID)
	})
}

// recoverPanics turns a panic in a handler into a logged error and a 500
// problem, instead of a dropped connection.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w}
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				// The handler asked for the connection to be dropped.
				panic(v)
			}
			s.log.Error("handler panicked", alert.Attr(alert.HandlerPanic), "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rec.status == 0 {
				writeProblem(rec, s.log, wire.NewProblem(wire.ProblemInternalError, ""))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}
