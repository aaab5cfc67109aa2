package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"chargeonce/checkout"
	"chargeonce/internal/webhook"
)

// The event types of the provider contract.
const (
	eventChargeSucceeded = "charge.succeeded"
	eventChargeFailed    = "charge.failed"
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

// providerEvents serves POST /webhooks/provider.
type providerEvents struct {
	*server
	verifier *webhook.Verifier
	results  *prometheus.CounterVec
}

// eventBody is the part of an event that the API reads: the type and the
// charge's id and merchant reference. Other fields are allowed, as a
// provider adds them over time.
type eventBody struct {
	Type string `json:"type"`
	Data *struct {
		ID                string `json:"id"`
		MerchantReference string `json:"merchant_reference"`
	} `json:"data"`
}

func newProviderEvents(s *server, secrets []webhook.Secret, reg prometheus.Registerer) (*providerEvents, error) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chargeonce_provider_events_total",
		Help: "Provider events received at POST /webhooks/provider, by what became of them.",
	}, []string{"result"})
	if err := reg.Register(results); err != nil {
		return nil, err
	}
	// Every result is exported from 0, so that a rate over it starts at once.
	for _, r := range []string{
		string(checkout.EventSignaled), string(checkout.EventSettled), string(checkout.EventUnknownReference),
		string(checkout.EventNoWorkflow), string(checkout.EventDuplicate), eventRefused, eventMalformed, eventUnavailable,
	} {
		results.WithLabelValues(r)
	}
	return &providerEvents{server: s, verifier: webhook.NewVerifier(secrets, nil), results: results}, nil
}

func (e *providerEvents) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		e.results.WithLabelValues(eventMalformed).Inc()
		writeProblem(w, e.log, newProblem(kindInvalid, describeJSONError(err)))
		return
	}
	id, err := e.verifier.Verify(r.Header, body)
	if err != nil {
		e.results.WithLabelValues(eventRefused).Inc()
		e.log.Warn("provider event refused: bad signature", "event", r.Header.Get(webhook.HeaderID), "error", err)
		writeProblem(w, e.log, newProblem(kindUnauthorized, err.Error()))
		return
	}
	ev, err := parseEvent(body)
	if err != nil {
		e.results.WithLabelValues(eventMalformed).Inc()
		e.log.Warn("provider event refused: malformed", "event", id, "error", err)
		writeProblem(w, e.log, newProblem(kindInvalid, err.Error()))
		return
	}
	ev.ID, ev.Payload = id, body
	result, err := e.checkout.HandleProviderEvent(r.Context(), ev)
	if err != nil {
		e.results.WithLabelValues(eventUnavailable).Inc()
		// Not for a human: the provider delivers it again.
		e.log.Warn("provider event not handled; the provider delivers it again", "event", id, "error", err)
		writeProblem(w, e.log, newProblem(kindUnavailable, "the event could not be handled now; deliver it again"))
		return
	}
	e.results.WithLabelValues(string(result)).Inc()
	writeJSON(w, e.log, http.StatusOK, "application/json", map[string]string{"result": string(result)})
}

// parseEvent reads a verified body. It refuses what is not an event of the
// provider contract.
func parseEvent(body []byte) (checkout.ProviderEvent, error) {
	var b eventBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return checkout.ProviderEvent{}, errors.New("the event is not a JSON object: " + describeJSONError(err))
	}
	if dec.More() {
		return checkout.ProviderEvent{}, errors.New("the body must hold a single JSON object and nothing after it")
	}
	switch {
	case b.Type != eventChargeSucceeded && b.Type != eventChargeFailed:
		return checkout.ProviderEvent{}, errors.New(`the event type must be "charge.succeeded" or "charge.failed"`)
	case b.Data == nil || b.Data.ID == "" || b.Data.MerchantReference == "":
		return checkout.ProviderEvent{}, errors.New("the event's data must be a charge with its id and merchant_reference")
	}
	return checkout.ProviderEvent{Type: b.Type, ChargeID: b.Data.ID, MerchantReference: b.Data.MerchantReference}, nil
}
