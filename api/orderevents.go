package api

import (
	"fmt"
	"net/http"

	"chargeonce/api/wire"
	"chargeonce/notify"
)

func (s *server) orderEvents(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// An unknown order is a 404, not an empty list.
	if _, _, err := s.store.GetOrder(r.Context(), id); err != nil {
		s.fail(w, r, fmt.Errorf("order %d: %w", id, err))
		return
	}
	events, err := s.store.OrderEvents(r.Context(), id)
	if err != nil {
		s.fail(w, r, fmt.Errorf("order %d: events: %w", id, err))
		return
	}
	// The events read as the endpoints get them: one renderer for both.
	body := wire.EventList{Events: make([]wire.Event, 0, len(events))}
	for _, e := range events {
		body.Events = append(body.Events, notify.Render(e))
	}
	writeJSON(w, s.log, http.StatusOK, "application/json", body)
}
