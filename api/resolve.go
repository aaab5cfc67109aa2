package api

import (
	"fmt"
	"net/http"
	"time"

	"chargeonce/api/wire"
	"chargeonce/store"
)

// exceptionID reads the {id} path value of an exception's route.
func exceptionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !store.ValidExceptionID(id) {
		return "", badRequest("exception id %q must be 16 lower-case hex digits, the id that the settlement shows", id)
	}
	return id, nil
}

// resolveException serves POST /api/settlements/{date}/exceptions/{id}/resolve:
// it records what a person decided about one exception that the date's
// settlement lists. The first resolution is kept: the same note again is
// answered 200 with it, another note 409.
func (s *server) resolveException(w http.ResponseWriter, r *http.Request) {
	provider, date, err := s.books(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := exceptionID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req wire.ResolveExceptionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := store.CheckResolutionNote(req.Note); err != nil {
		s.fail(w, r, badRequest(`field "note" %v`, err))
		return
	}
	_, exceptions, err := s.settlementOf(r.Context(), provider, date)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	found := false
	for _, e := range exceptions {
		if store.ExceptionID(date, e) == id {
			found = true
			break
		}
	}
	if !found {
		s.fail(w, r, &problemError{typ: wire.ProblemNotFound,
			detail: fmt.Sprintf("the settlement of %s at provider %s has no exception %s: GET %s lists its exceptions with their ids", date, provider, id, s.booksPath(provider, date, ""))})
		return
	}
	key := infoOf(r).key
	stored, created, err := s.store.ResolveException(r.Context(), store.ExceptionResolution{
		Provider: provider, Date: date, ExceptionID: id, Note: req.Note, KeyID: key.ID, KeyName: key.Name, At: time.Now().UTC(),
	})
	switch {
	case err != nil:
		s.fail(w, r, fmt.Errorf("resolve exception %s of %s at %s: %w", id, date, provider, err))
		return
	case created:
		s.log.Info("settlement exception resolved", "provider", provider, "date", date, "exception", id, "key_id", key.ID)
		writeJSON(w, s.log, http.StatusCreated, "application/json", newResolution(stored))
	case stored.Note == req.Note:
		writeJSON(w, s.log, http.StatusOK, "application/json", newResolution(stored))
	default:
		s.fail(w, r, alreadyResolved(date, id, stored))
	}
}

// alreadyResolved is the conflict of a resolution sent with another note
// than the one kept: it says who resolved the exception, and when.
func alreadyResolved(date, id string, kept store.ExceptionResolution) error {
	return &problemError{typ: wire.ProblemAlreadyResolved,
		detail: fmt.Sprintf("the exception %s of %s was resolved by the key %s (%s) at %s with another note; the first resolution is kept",
			id, date, kept.KeyID, kept.KeyName, kept.At.UTC().Format(time.RFC3339))}
}
