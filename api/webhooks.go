package api

import (
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/internal/strictjson"
	"chargeonce/internal/webhook"
)

// The results of chargeonce_provider_events_total besides those of
// checkout.HandleProviderEvent: the events refused before handling, and
// the ones whose handling failed and that the provider is asked to send
// again.
const (
	eventRefused     = "refused"
	eventMalformed   = "malformed"
	eventUnavailable = "unavailable"
)

// providerEvents serves POST /webhooks/provider/{provider}, and POST
// /webhooks/provider for the default provider.
type providerEvents struct {
	*server
	// verifiers hold each provider's, by its name.
	verifiers map[string]*webhook.Verifier
	// def names the provider of WebhookPath.
	def     string
	results *prometheus.CounterVec
}

// eventBody is the part of an event that the API reads: the type, and the
// id and merchant reference of the charge or refund, with a refund's charge
// and failure reason. Other fields are skipped, as a provider adds them
// over time; the names read match exactly.
type eventBody struct {
	Type string `json:"type"`
	Data *struct {
		ID                string  `json:"id"`
		MerchantReference string  `json:"merchant_reference"`
		Charge            string  `json:"charge"`
		FailureReason     *string `json:"failure_reason"`
	} `json:"data"`
}

func newProviderEvents(s *server, secrets map[string][]webhook.Secret, def string, reg prometheus.Registerer) (*providerEvents, error) {
	verifiers := make(map[string]*webhook.Verifier, len(secrets))
	for name, ss := range secrets {
		if err := chargeonce.CheckProviderName(name); err != nil {
			return nil, fmt.Errorf("config: webhook secrets: %w", err)
		}
		if len(ss) == 0 {
			return nil, fmt.Errorf("config: webhook secrets: provider %q has none", name)
		}
		verifiers[name] = webhook.NewVerifier(ss, nil)
	}
	if verifiers[def] == nil {
		return nil, fmt.Errorf("config: the default provider %q has no webhook secrets", def)
	}
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chargeonce_provider_events_total",
		Help: "Provider events received at POST /webhooks/provider and /webhooks/provider/{provider}, by what became of them.",
	}, []string{"result"})
	if err := reg.Register(results); err != nil {
		return nil, err
	}
	// Every result is exported from 0, so that a rate over it starts at once.
	for _, r := range checkout.EventResults {
		results.WithLabelValues(string(r))
	}
	for _, r := range []string{eventRefused, eventMalformed, eventUnavailable} {
		results.WithLabelValues(r)
	}
	return &providerEvents{server: s, verifiers: verifiers, def: def, results: results}, nil
}

// serveDefault serves WebhookPath: the default provider's events.
func (e *providerEvents) serveDefault(w http.ResponseWriter, r *http.Request) {
	e.serve(w, r, e.def)
}

// serveNamed serves the events of the provider that the path names, which
// must be one the API holds secrets of.
func (e *providerEvents) serveNamed(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("provider")
	if e.verifiers[name] == nil {
		writeProblem(w, e.log, wire.NewProblem(wire.ProblemNotFound, fmt.Sprintf("no provider %q sends its events here", name)))
		return
	}
	e.serve(w, r, name)
}

// serve verifies an event with the secrets of the provider named name and
// handles it as that provider's.
func (e *providerEvents) serve(w http.ResponseWriter, r *http.Request, name string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		e.results.WithLabelValues(eventMalformed).Inc()
		e.fail(w, r, readError(err))
		return
	}
	id, err := e.verifiers[name].Verify(r.Header, body)
	if err != nil {
		e.results.WithLabelValues(eventRefused).Inc()
		e.log.Warn("provider event refused: bad signature", "provider", name, "event", r.Header.Get(webhook.HeaderID), "error", err)
		// Verify's errors say which rule of the signature the request
		// breaks, and nothing of the secrets.
		e.fail(w, r, &problemError{typ: wire.ProblemUnauthorized, detail: err.Error()})
		return
	}
	ev, err := parseEvent(body)
	if err != nil {
		e.results.WithLabelValues(eventMalformed).Inc()
		e.log.Warn("provider event refused: malformed", "provider", name, "event", id, "error", err)
		e.fail(w, r, err)
		return
	}
	ev.Provider, ev.ID, ev.Payload = name, id, body
	result, err := e.checkout.HandleProviderEvent(r.Context(), ev)
	if err != nil {
		e.results.WithLabelValues(eventUnavailable).Inc()
		// Not for a human: the provider delivers it again.
		e.log.Warn("provider event not handled; the provider delivers it again", "provider", name, "event", id, "error", err)
		e.fail(w, r, &problemError{typ: wire.ProblemUnavailable, detail: "the event could not be handled now; deliver it again"})
		return
	}
	e.results.WithLabelValues(string(result)).Inc()
	writeJSON(w, e.log, http.StatusOK, "application/json", wire.EventReceipt{Result: string(result)})
}

// parseEvent reads a verified body. It refuses what is not an event of the
// provider contract with a bad request.
func parseEvent(body []byte) (checkout.ProviderEvent, error) {
	var b eventBody
	if err := strictjson.UnmarshalExtensible(body, &b); err != nil {
		return checkout.ProviderEvent{}, badRequest("the event is refused: %v", err)
	}
	switch b.Type {
	case webhook.EventChargeSucceeded, webhook.EventChargeFailed,
		webhook.EventChargeAuthorized, webhook.EventChargeCaptured, webhook.EventChargeVoided, webhook.EventChargeExpired:
		if b.Data == nil || b.Data.ID == "" || b.Data.MerchantReference == "" {
			return checkout.ProviderEvent{}, badRequest("the event's data must be a charge with its id and merchant_reference")
		}
		return checkout.ProviderEvent{Type: b.Type, ChargeID: b.Data.ID, MerchantReference: b.Data.MerchantReference}, nil
	case webhook.EventRefundSucceeded, webhook.EventRefundFailed:
		if b.Data == nil || b.Data.ID == "" || b.Data.Charge == "" || b.Data.MerchantReference == "" {
			return checkout.ProviderEvent{}, badRequest("the event's data must be a refund with its id, charge and merchant_reference")
		}
		ev := checkout.ProviderEvent{Type: b.Type, ChargeID: b.Data.Charge, MerchantReference: b.Data.MerchantReference, RefundID: b.Data.ID}
		if b.Data.FailureReason != nil {
			ev.FailureReason = *b.Data.FailureReason
		}
		return ev, nil
	}
	return checkout.ProviderEvent{}, badRequest("the event type must be one of %q, %q, %q, %q, %q, %q, %q and %q",
		webhook.EventChargeSucceeded, webhook.EventChargeFailed, webhook.EventChargeAuthorized, webhook.EventChargeCaptured,
		webhook.EventChargeVoided, webhook.EventChargeExpired, webhook.EventRefundSucceeded, webhook.EventRefundFailed)
}
