package fakeprovider

import (
	"net/http"
	"time"
)

// Outcomes of the admin API, for its log lines.
const (
	outcomeModeRead       = "mode read"
	outcomeModeChanged    = "mode changed"
	outcomeModeRefused    = "refused invalid mode"
	outcomeRequestsListed = "requests listed"
	outcomeAllCharges     = "all charges listed"
	outcomeReset          = "state reset"
	outcomeKeysExpired    = "keys expired"
)

func (p *Provider) getMode(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeModeRead
	writeJSON(w, http.StatusOK, p.Mode())
}

func (p *Provider) putMode(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var m Mode
	if prob := decodeJSON(w, r, &m); prob != nil {
		rec.fail(w, outcomeModeRefused, prob)
		return
	}
	if err := m.Validate(); err != nil {
		rec.fail(w, outcomeModeRefused, newProblem(codeInvalidRequest, err.Error()))
		return
	}
	if err := p.SetMode(m); err != nil {
		p.dataFileFailed(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeModeChanged
	writeJSON(w, http.StatusOK, m)
}

func (p *Provider) listRequests(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeRequestsListed
	writeJSON(w, http.StatusOK, struct {
		Data []RequestRecord `json:"data"`
	}{nonNil(p.Requests())})
}

func (p *Provider) listAllCharges(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeAllCharges
	writeJSON(w, http.StatusOK, chargeList{Data: nonNil(p.Charges())})
}

func (p *Provider) reset(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	if err := p.Reset(); err != nil {
		p.dataFileFailed(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeReset
	w.WriteHeader(http.StatusNoContent)
}

// expireKeys serves POST /_admin/expire-keys. The age comes from the
// older_than query parameter or from a {"older_than": "24h"} body.
func (p *Provider) expireKeys(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	olderThan := r.URL.Query().Get("older_than")
	if olderThan == "" {
		var body struct {
			OlderThan string `json:"older_than"`
		}
		if prob := decodeJSON(w, r, &body); prob != nil {
			rec.fail(w, outcomeBadRequest, prob)
			return
		}
		olderThan = body.OlderThan
	}
	age, err := time.ParseDuration(olderThan)
	if err != nil || age < 0 {
		rec.fail(w, outcomeBadRequest, invalidField("older_than", msgOlderThan))
		return
	}
	forgotten, err := p.ExpireKeys(age)
	if err != nil {
		p.dataFileFailed(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeKeysExpired
	writeJSON(w, http.StatusOK, struct {
		Forgotten int `json:"forgotten"`
	}{forgotten})
}

// dataFileFailed answers 503 for a change the data file refused, which
// therefore did not happen.
func (p *Provider) dataFileFailed(w http.ResponseWriter, r *http.Request, rec *RequestRecord, err error) {
	p.log.ErrorContext(r.Context(), "data file write failed", "path", r.URL.Path, "err", err)
	rec.fail(w, outcomeDataFileFailed, newProblem(codeUnavailable, msgDataFileFailed))
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
