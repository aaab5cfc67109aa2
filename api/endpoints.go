package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/internal/webhook"
	"chargeonce/notify"
	"chargeonce/store"
)

// The merchant's event endpoints (docs/checkout-api.md#signed-events): the
// operator registers them, lists them, disables and enables them, rotates
// their secrets, reads their delivery log and replays an event to one. The
// worker's dispatcher (package notify) does the sending.

const (
	// maxEndpointURLBytes caps an endpoint's URL, as browsers and proxies
	// commonly do.
	maxEndpointURLBytes = 2048
	// defaultKeepPrevious is how long a rotated-out secret still signs
	// when the request does not say: a day, for the receiver to deploy
	// the new secret.
	defaultKeepPrevious = 24 * time.Hour
	// maxKeepPrevious bounds it: a secret rotated out because it leaked
	// must not sign for long.
	maxKeepPrevious = 30 * 24 * time.Hour
	// defaultDeliveries and maxDeliveries are the default and the largest
	// limit of GET /api/webhook-endpoints/{id}/deliveries.
	defaultDeliveries = 100
	maxDeliveries     = 1000
	// disabledThroughAPI is the reason an endpoint disabled by the
	// operator shows; the dispatcher gives its own for a 410.
	disabledThroughAPI = "disabled through the API"
)

// The ids of the path: an endpoint's (chargeonce.NewEndpointID) and an
// event's (the store's), in their only spelling.
var (
	endpointIDPattern = regexp.MustCompile(`^` + chargeonce.EndpointIDPrefix + `[0-9a-f]{32}$`)
	eventIDPattern    = regexp.MustCompile(`^evt_[0-9a-f]{32}$`)
)

func endpointLocation(id string) string { return "/api/webhook-endpoints/" + id }

// newEndpointBody is the endpoint as the API shows it, without its secret:
// only the answers that make a secret add it.
func newEndpointBody(e store.Endpoint, now time.Time) wire.Endpoint {
	b := wire.Endpoint{
		ID: e.ID, URL: e.URL, EventTypes: make([]string, 0, len(e.EventTypes)), Description: e.Description,
		Status: "enabled", CreatedAt: e.CreatedAt.UTC(),
	}
	for _, t := range e.EventTypes {
		b.EventTypes = append(b.EventTypes, string(t))
	}
	if e.DisabledAt != nil {
		b.Status = "disabled"
		reason := e.DisabledReason
		b.DisabledReason = &reason
	}
	if e.FailingSince != nil {
		t := e.FailingSince.UTC()
		b.FailingSince = &t
	}
	// A previous secret that has expired signs nothing any more.
	if e.PreviousSecretExpiresAt != nil && e.PreviousSecretExpiresAt.After(now) {
		t := e.PreviousSecretExpiresAt.UTC()
		b.PreviousSecretExpiresAt = &t
	}
	return b
}

// validateEndpointURL checks where events are to be sent: an absolute URL
// whose scheme and host the dispatcher's rule allows
// (notify.AllowedNetworks.CheckURL): https to a public address or a name,
// or http to a loopback host; an internal address only where the
// deployment allows its network.
func validateEndpointURL(raw string, allows notify.AllowedNetworks) error {
	const rule = "must be an absolute https URL, or http to localhost, 127.0.0.0/8 or [::1]"
	if raw == "" {
		return badRequest(`field "url" is required: it %s`, rule)
	}
	if len(raw) > maxEndpointURLBytes {
		return badRequest(`field "url" has %d bytes; at most %d are allowed`, len(raw), maxEndpointURLBytes)
	}
	if err := chargeonce.ValidateText(raw); err != nil {
		return badRequest(`field "url" %v`, err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return badRequest(`field "url" is not a URL: it %s`, rule)
	}
	switch {
	case !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return badRequest(`field "url" %s, such as https://shop.example/chargeonce-events`, rule)
	case u.User != nil:
		return badRequest(`field "url" must not hold a user name or password: the signature authenticates each event`)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return badRequest(`field "url" must not have a #fragment, which is never sent`)
	}
	if err := allows.CheckURL(u); err != nil {
		return badRequest(`field "url" %v`, err)
	}
	return nil
}

// parseEventTypes checks the event types an endpoint wants: known ones,
// each once; none means all.
func parseEventTypes(list []string) ([]chargeonce.EventType, error) {
	types := make([]chargeonce.EventType, 0, len(list))
	seen := make(map[chargeonce.EventType]bool, len(list))
	for i, raw := range list {
		t := chargeonce.EventType(raw)
		if !t.Valid() {
			known := make([]string, 0, len(chargeonce.EventTypes()))
			for _, k := range chargeonce.EventTypes() {
				known = append(known, string(k))
			}
			return nil, badRequest(`field "eventTypes" item %d is %q, not an event type: %s, or an empty list for all`, i+1, raw, strings.Join(known, ", "))
		}
		if seen[t] {
			return nil, badRequest(`field "eventTypes" lists %q twice`, raw)
		}
		seen[t] = true
		types = append(types, t)
	}
	return types, nil
}

// parseCreateEndpoint checks the body of POST /api/webhook-endpoints.
func parseCreateEndpoint(req wire.CreateEndpointRequest, allows notify.AllowedNetworks) ([]chargeonce.EventType, error) {
	if err := validateEndpointURL(req.URL, allows); err != nil {
		return nil, err
	}
	types, err := parseEventTypes(req.EventTypes)
	if err != nil {
		return nil, err
	}
	if err := chargeonce.ValidateDescription(req.Description); err != nil {
		return nil, badRequest(`field "description" %v`, err)
	}
	return types, nil
}

// parseKeepPrevious reads keepPreviousFor of a rotation: a Go duration from
// 0s to maxKeepPrevious; empty is defaultKeepPrevious.
func parseKeepPrevious(raw string) (time.Duration, error) {
	if raw == "" {
		return defaultKeepPrevious, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 || d > maxKeepPrevious {
		return 0, badRequest(`field "keepPreviousFor" is %q; it is a duration from "0s" (retire the previous secret at once) to "%dh", such as "24h"`,
			raw, int(maxKeepPrevious.Hours()))
	}
	return d, nil
}

// deliveriesLimit reads the limit query parameter of the delivery log.
func deliveriesLimit(r *http.Request) (int, error) {
	q := r.URL.Query()
	values, given := q["limit"]
	if !given {
		return defaultDeliveries, nil
	}
	n, err := strconv.Atoi(values[0])
	if len(values) != 1 || err != nil || n < 1 || n > maxDeliveries || strconv.Itoa(n) != values[0] {
		return 0, badRequest("the query parameter limit is a whole number from 1 to %d, given once", maxDeliveries)
	}
	return n, nil
}

// endpointID reads the {id} path value of an endpoint's route.
func endpointID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !endpointIDPattern.MatchString(id) {
		return "", badRequest("endpoint id %q must be we_ and 32 lower-case hex digits, as POST /api/webhook-endpoints answered", id)
	}
	return id, nil
}

// endpointNotFound turns the store's ErrNotFound for an endpoint into its
// 404; fail would name an order.
func endpointNotFound(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &problemError{typ: wire.ProblemNotFound, detail: "no webhook endpoint " + id}
	}
	return fmt.Errorf("webhook endpoint %s: %w", id, err)
}

func (s *server) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateEndpointRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	types, err := parseCreateEndpoint(req, s.eventNetworks)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now()
	secret := webhook.NewSecret()
	e, err := s.store.CreateEndpoint(r.Context(), store.NewEndpoint{
		ID: chargeonce.NewEndpointID(), URL: req.URL, EventTypes: types, Description: req.Description, Secret: secret, Now: now,
	})
	if err != nil {
		s.fail(w, r, fmt.Errorf("create webhook endpoint: %w", err))
		return
	}
	s.log.Info("webhook endpoint created", "endpoint", e.ID, "url", e.URL)
	body := newEndpointBody(e, now)
	body.Secret = secret
	w.Header().Set("Location", endpointLocation(e.ID))
	writeJSON(w, s.log, http.StatusCreated, "application/json", body)
}

func (s *server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	list, err := s.store.Endpoints(r.Context())
	if err != nil {
		s.fail(w, r, fmt.Errorf("webhook endpoints: %w", err))
		return
	}
	now := time.Now()
	body := wire.EndpointList{Endpoints: make([]wire.Endpoint, 0, len(list))}
	for _, e := range list {
		body.Endpoints = append(body.Endpoints, newEndpointBody(e, now))
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", body)
}

func (s *server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.store.GetEndpoint(r.Context(), id)
	if err != nil {
		s.fail(w, r, endpointNotFound(id, err))
		return
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", newEndpointBody(e, time.Now()))
}

// setEndpointDisabled serves …/disable (disabled true) and …/enable.
func (s *server) setEndpointDisabled(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := endpointID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var req wire.EndpointStateRequest
		if err := decodeJSON(w, r, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		reason, done := "", "webhook endpoint enabled"
		if disabled {
			reason, done = disabledThroughAPI, "webhook endpoint disabled"
		}
		now := time.Now()
		e, err := s.store.SetEndpointDisabled(r.Context(), id, disabled, reason, now)
		if err != nil {
			s.fail(w, r, endpointNotFound(id, err))
			return
		}
		s.log.Info(done, "endpoint", id)
		writeJSON(w, s.log, http.StatusOK, "application/json", newEndpointBody(e, now))
	}
}

func (s *server) rotateEndpointSecret(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req wire.RotateSecretRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	keep, err := parseKeepPrevious(req.KeepPreviousFor)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now()
	secret := webhook.NewSecret()
	e, err := s.store.RotateEndpointSecret(r.Context(), id, secret, now.Add(keep), now)
	if err != nil {
		s.fail(w, r, endpointNotFound(id, err))
		return
	}
	s.log.Info("webhook endpoint secret rotated", "endpoint", id, "previous_signs_for", keep.String())
	body := newEndpointBody(e, now)
	body.Secret = secret
	writeJSON(w, s.log, http.StatusOK, "application/json", body)
}

func (s *server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	id, err := endpointID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := deliveriesLimit(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// An unknown endpoint is a 404, not an empty log.
	if _, err := s.store.GetEndpoint(r.Context(), id); err != nil {
		s.fail(w, r, endpointNotFound(id, err))
		return
	}
	tries, err := s.store.Deliveries(r.Context(), id, limit)
	if err != nil {
		s.fail(w, r, fmt.Errorf("webhook endpoint %s: deliveries: %w", id, err))
		return
	}
	body := wire.DeliveryList{Deliveries: make([]wire.Delivery, 0, len(tries))}
	for _, a := range tries {
		d := wire.Delivery{EventID: a.EventID, EventType: string(a.EventType), EndpointID: a.EndpointID, Attempt: a.Attempt,
			At: a.At.UTC(), Result: string(a.Result), Failure: optional(string(a.Failure)), DurationMS: a.Duration.Milliseconds()}
		if a.HTTPStatus != 0 {
			status := a.HTTPStatus
			d.HTTPStatus = &status
		}
		body.Deliveries = append(body.Deliveries, d)
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", body)
}

func (s *server) replayEvent(w http.ResponseWriter, r *http.Request) {
	eventID := r.PathValue("id")
	if !eventIDPattern.MatchString(eventID) {
		s.fail(w, r, badRequest("event id %q must be evt_ and 32 lower-case hex digits, as the event's id and webhook-id header say", eventID))
		return
	}
	var req wire.ReplayRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if !endpointIDPattern.MatchString(req.EndpointID) {
		s.fail(w, r, badRequest(`field "endpointId" is %q; it must be we_ and 32 lower-case hex digits, the endpoint to send the event to`, req.EndpointID))
		return
	}
	// The store answers ErrNotFound for either; the 404 names which.
	if _, err := s.store.GetEvent(r.Context(), eventID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = &problemError{typ: wire.ProblemNotFound, detail: "no event " + eventID}
		}
		s.fail(w, r, err)
		return
	}
	if _, err := s.store.GetEndpoint(r.Context(), req.EndpointID); err != nil {
		s.fail(w, r, endpointNotFound(req.EndpointID, err))
		return
	}
	now := time.Now()
	switch err := s.store.ReplayEvent(r.Context(), eventID, req.EndpointID, now); {
	case errors.Is(err, store.ErrEndpointDisabled):
		s.fail(w, r, &problemError{typ: wire.ProblemEndpointDisabled,
			detail: "the webhook endpoint " + req.EndpointID + " is disabled; enable it (POST " + endpointLocation(req.EndpointID) + "/enable) and replay again"})
		return
	case err != nil:
		s.fail(w, r, endpointNotFound(req.EndpointID, fmt.Errorf("replay %s: %w", eventID, err)))
		return
	}
	s.log.Info("event replayed", "event", eventID, "endpoint", req.EndpointID)
	writeJSON(w, s.log, http.StatusAccepted, "application/json", wire.ReplayAnswer{EventID: eventID, EndpointID: req.EndpointID, NextAttemptAt: now.UTC()})
}
