package fakeprovider

import (
	"log/slog"
	"net/http"
	"time"
)

// handler serves one request and describes it in rec.
type handler func(w http.ResponseWriter, r *http.Request, rec *RequestRecord)

func (p *Provider) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", p.api(p.postCharge))
	mux.Handle("GET /v1/charges", p.api(p.listCharges))
	mux.Handle("GET /v1/charges/{id}", p.api(p.getCharge))
	mux.Handle("POST /v1/charges/{id}/capture", p.api(p.postCapture))
	mux.Handle("POST /v1/charges/{id}/void", p.api(p.postVoid))
	mux.Handle("POST "+refundPath, p.api(byDialect(p.postRefund, p.postStripeRefund)))
	mux.Handle("GET "+refundPath, p.api(byDialect(p.listRefunds, p.listStripeRefunds)))
	mux.Handle("GET "+refundPath+"/{id}", p.api(byDialect(p.getRefund, p.getStripeRefund)))
	mux.Handle("GET /v1/idempotency", p.api(p.getIdempotency))
	mux.Handle("GET /v1/settlements/{date}", p.api(p.getSettlement))

	mux.Handle("POST "+stripeChargePath, p.api(stripeAPI(p.postPaymentIntent)))
	mux.Handle("GET "+stripeSearchPath, p.api(stripeAPI(p.searchPaymentIntents)))
	mux.Handle("GET "+stripeChargePath+"/{id}", p.api(stripeAPI(p.getPaymentIntent)))
	mux.Handle("POST "+stripeChargePath+"/{id}/capture", p.api(stripeAPI(p.postStripeCapture)))
	mux.Handle("POST "+stripeChargePath+"/{id}/cancel", p.api(stripeAPI(p.postStripeCancel)))

	mux.Handle("GET /_admin/mode", p.admin(p.getMode))
	mux.Handle("PUT /_admin/mode", p.admin(p.putMode))
	mux.Handle("GET /_admin/requests", p.admin(p.listRequests))
	mux.Handle("GET /_admin/charges", p.admin(p.listAllCharges))
	mux.Handle("POST /_admin/reset", p.admin(p.reset))
	mux.Handle("POST /_admin/expire-keys", p.admin(p.expireKeys))
	mux.Handle("POST /_admin/charges", p.admin(p.plantCharge))
	mux.Handle("POST /_admin/settlements", p.admin(p.alterSettlement))
	mux.Handle("GET /_admin/refunds", p.admin(p.listAllRefunds))
	mux.Handle("GET /_admin/refunds/hold", p.admin(p.getRefundHold))
	mux.Handle("PUT /_admin/refunds/hold", p.admin(p.putRefundHold))
	mux.Handle("POST /_admin/refunds/{id}/settle", p.admin(p.settleRefund))
	mux.Handle("GET /_admin/webhooks", p.admin(p.getWebhooks))
	mux.Handle("PUT /_admin/webhooks", p.admin(p.putWebhooks))
	return mux
}

// api wraps a provider API handler: one log line and one RequestRecord per
// request.
func (p *Provider) api(h handler) http.Handler {
	return p.track(h, true)
}

// admin wraps an admin handler: one log line, no RequestRecord, so that
// inspecting the provider does not change what it reports.
func (p *Provider) admin(h handler) http.Handler {
	return p.track(h, false)
}

func (p *Provider) track(h handler, record bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &RequestRecord{Time: p.now().UTC(), Method: r.Method, Path: r.URL.Path}
		sw := &statusWriter{ResponseWriter: w}
		// Deferred so that a request aborted with http.ErrAbortHandler is
		// recorded and logged too; the panic continues to net/http.
		defer func() {
			rec.Status = sw.status
			elapsed := time.Since(start)
			rec.DurationMS = float64(elapsed.Microseconds()) / 1000
			if record {
				p.mu.Lock()
				p.recordLocked(*rec)
				p.mu.Unlock()
			}
			p.logRequest(r, rec, elapsed)
		}()
		h(sw, r, rec)
	})
}

// recordLocked appends rec to the request log. The answer has been sent by
// now, so a record the data file refuses is kept in memory only.
func (p *Provider) recordLocked(rec RequestRecord) {
	if p.file != nil {
		if err := p.file.saveRequest(rec); err != nil {
			p.log.Error("data file write failed; request recorded in memory only", "path", rec.Path, "key", rec.Key, "err", err)
		}
	}
	p.requests = append(p.requests, rec)
}

func (p *Provider) logRequest(r *http.Request, rec *RequestRecord, elapsed time.Duration) {
	level := slog.LevelInfo
	// A decline (402) and a refused capture or void (403) are results,
	// not faults.
	if rec.Status == 0 || (rec.Status >= 400 && rec.Status != http.StatusPaymentRequired && rec.Status != http.StatusForbidden) {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("method", rec.Method),
		slog.String("path", rec.Path),
		slog.String("key", rec.Key),
		slog.Int("status", rec.Status),
		slog.Bool("replayed", rec.Replayed),
		slog.Duration("duration", elapsed),
	}
	if rec.ChargeID != "" {
		attrs = append(attrs, slog.String("charge", rec.ChargeID))
	}
	if rec.RefundID != "" {
		attrs = append(attrs, slog.String("refund", rec.RefundID))
	}
	if rec.Detail != "" {
		attrs = append(attrs, slog.String("detail", rec.Detail))
	}
	p.log.LogAttrs(r.Context(), level, rec.Outcome, attrs...)
}

// fail answers with a problem of the IETF dialect, which the admin API
// speaks too, and records why.
func (rec *RequestRecord) fail(w http.ResponseWriter, outcome string, p *problem) {
	ietf.fail(w, rec, outcome, p)
}

// statusWriter remembers the status sent; 0 means nothing was sent.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}
