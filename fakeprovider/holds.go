package fakeprovider

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"chargeonce/internal/webhook"
)

// The decline codes of a capture or a void that the provider refuses.
const (
	declineHoldExpired    = "hold_expired"
	declineHoldVoided     = "hold_voided"
	declineHoldCaptured   = "hold_captured"
	declineAmountTooLarge = "amount_too_large"
	declineNotAHold       = "not_a_hold"
)

// cancellationAutomatic is the cancellation reason of a hold that expired,
// as Stripe words it.
const cancellationAutomatic = "automatic"

// holdEntry is what a hold's charge object does not show: when it was
// captured, or when and why it was canceled (voided or expired). It is the
// form the data file keeps.
type holdEntry struct {
	ChargeID   string    `json:"charge_id"`
	CapturedAt time.Time `json:"captured_at,omitzero"`
	CanceledAt time.Time `json:"canceled_at,omitzero"`
	// CancellationReason is Stripe's: the reason a void gave, or
	// "automatic" for an expiry.
	CancellationReason string `json:"cancellation_reason,omitempty"`
}

// holdMove is one of the two moves of an authorization, capture or void,
// as both dialects make it.
type holdMove struct {
	// name is the last segment of the move's path.
	name string
	// refusal is the problem that carries a decline of the move.
	refusal problemCode
	event   string
	// made and refused are the outcomes of the request log.
	made, refused string
}

var (
	captureMove = &holdMove{name: "capture", refusal: codeChargeNotCapturable, event: webhook.EventChargeCaptured, made: outcomeCaptured, refused: outcomeCaptureRefused}
	voidMove    = &holdMove{name: "void", refusal: codeChargeNotVoidable, event: webhook.EventChargeVoided, made: outcomeVoided, refused: outcomeVoidRefused}
)

// holdRequest is a capture or a void of the charge of the path: for a
// capture the amount (zero, in Stripe's dialect, captures it all) and its
// currency, for a Stripe void its reason. Its fields are declared in
// alphabetical order of their JSON names, so that encoding it yields the
// canonical form the fingerprint is taken over. Keep them sorted.
type holdRequest struct {
	Amount   int64  `json:"amount,omitempty"`
	Charge   string `json:"charge"`
	Currency string `json:"currency,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// captureBody is the body of POST /v1/charges/{id}/capture.
type captureBody struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// postCapture serves POST /v1/charges/{id}/capture.
func (p *Provider) postCapture(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	p.postHoldMove(w, r, rec, captureMove, func() (holdRequest, *problem) {
		var body captureBody
		if prob := decodeJSON(w, r, &body); prob != nil {
			return holdRequest{}, prob
		}
		return holdRequest{Amount: body.Amount, Currency: body.Currency}, amountProblem(body.Amount, body.Currency, true)
	})
}

// postVoid serves POST /v1/charges/{id}/void, whose body is empty or {}.
func (p *Provider) postVoid(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	p.postHoldMove(w, r, rec, voidMove, func() (holdRequest, *problem) {
		return holdRequest{}, decodeEmptyJSON(w, r)
	})
}

// postHoldMove serves a capture or a void in the IETF dialect: the same
// key rules, idempotency layer and chaos modes as POST /v1/charges.
func (p *Provider) postHoldMove(w http.ResponseWriter, r *http.Request, rec *RequestRecord, m *holdMove, decode func() (holdRequest, *problem)) {
	key, ok := p.ietfKey(w, r, rec)
	if !ok {
		return
	}
	req, prob := decode()
	if prob != nil {
		rec.fail(w, outcomeBadRequest, prob)
		return
	}
	req.Charge = r.PathValue("id")
	p.holdMoveOnce(w, r, rec, ietf, key, m, req)
}

// holdMoveOnce runs a valid capture or void through the idempotency layer,
// once its charge is known to exist behind d's door, in the currency
// given. A request about a charge that is not there is answered without
// using the key, as it changes nothing.
func (p *Provider) holdMoveOnce(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect, key string, m *holdMove, req holdRequest) {
	if prob := p.holdTarget(req, d); prob != nil {
		d.fail(w, rec, targetOutcome(prob), prob)
		return
	}
	rec.ChargeID = req.Charge
	p.once(w, r, rec, d, key, fingerprint(d.salt+m.name+"\n", req), p.holdOperation(req, d, m))
}

// holdTarget checks the charge of a capture or a void: an id of the
// characters ids have, of a charge made through d's door, in the currency
// of the request when it names one.
func (p *Provider) holdTarget(req holdRequest, d *dialect) *problem {
	if !validChargeID(req.Charge) {
		return invalidField("id", msgChargeID)
	}
	c, _, ok := p.lookupCharge(req.Charge)
	switch {
	case !ok || !strings.HasPrefix(req.Charge, d.idPrefix):
		return d.notFound()
	case req.Currency != "" && req.Currency != c.Currency:
		return invalidField("currency", msgCaptureCurrency+c.Currency)
	}
	return nil
}

// targetOutcome is the request log's word for a refused target.
func targetOutcome(p *problem) string {
	if p.Code == codeNotFound {
		return outcomeChargeNotFound
	}
	return outcomeBadRequest
}

// validChargeID reports whether id could be a charge's: short, and of the
// characters that need no escaping in a URL path.
func validChargeID(id string) bool {
	if id == "" || len(id) > maxReferenceLength {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// holdOperation makes the move m of req's charge, or declines it, a
// result stored under the key like a decline. A charge that is not an
// authorization, or whose authorization has expired, is declined.
func (p *Provider) holdOperation(req holdRequest, d *dialect, m *holdMove) operation {
	return func() (*storedResponse, func(execer) error, func()) {
		nothing := func(execer) error { return nil }
		i, ok := p.byID[req.Charge]
		if !ok {
			// Reset forgot it while the request waited.
			return d.problem(d.notFound()), nothing, func() {}
		}
		p.expireHoldsLocked()
		c, h := p.charges[i], p.holds[req.Charge]
		amount := cmp.Or(req.Amount, c.Amount)
		decline := holdDecline(c)
		if decline == "" && m == captureMove && amount > c.Amount {
			decline = declineAmountTooLarge
		}
		if decline != "" {
			return d.holdAnswer(c, h, m, decline), nothing, func() {}
		}
		now := p.now().UTC()
		h.ChargeID = c.ID
		if m == captureMove {
			c.Status, c.AmountCaptured = ChargeSucceeded, &amount
			h.CapturedAt = now
		} else {
			c.Status = ChargeVoided
			h.CanceledAt, h.CancellationReason = now, cmp.Or(req.Reason, "requested_by_customer")
		}
		save := func(db execer) error { return saveHoldMove(db, i+1, c, h) }
		apply := func() { p.moveHoldLocked(i, c, h, m.event) }
		return d.holdAnswer(c, h, m, ""), save, apply
	}
}

// holdDecline says why a charge cannot be captured or voided, or "" when
// it is an authorization that can.
func holdDecline(c Charge) string {
	switch {
	case c.AmountCaptured == nil:
		return declineNotAHold
	case c.Status == ChargeVoided:
		return declineHoldVoided
	case c.Status == ChargeExpired:
		return declineHoldExpired
	case c.Status == ChargeSucceeded:
		return declineHoldCaptured
	}
	return ""
}

// moveHoldLocked replaces the hold at index i, which is no longer
// authorized, and announces its move with an event of type event.
func (p *Provider) moveHoldLocked(i int, c Charge, h holdEntry, event string) {
	p.charges[i] = c
	p.holds[c.ID] = h
	delete(p.authorized, c.ID)
	p.webhooks.enqueue(event, c, c.ID, "")
}

// expireHoldsLocked expires every authorization whose capture_before has
// passed. Expiry is lazy: the reads, captures, voids, refunds and reports
// call it before they look, so that none sees an authorization that has
// expired. An expiry the data file refuses is logged and tried again at
// the next look.
func (p *Provider) expireHoldsLocked() {
	now := p.now()
	for id, i := range p.authorized {
		c := p.charges[i]
		if now.Before(c.CaptureBefore) {
			continue
		}
		c.Status = ChargeExpired
		h := holdEntry{ChargeID: id, CanceledAt: c.CaptureBefore.UTC(), CancellationReason: cancellationAutomatic}
		if p.file != nil {
			if err := p.file.inTx(func(tx *sql.Tx) error { return saveHoldMove(tx, i+1, c, h) }); err != nil {
				p.log.Error("data file write failed; hold expires later", "charge", id, "err", err)
				continue
			}
		}
		p.moveHoldLocked(i, c, h, webhook.EventChargeExpired)
	}
}

// captured is the amount of a charge that was captured: all of it, unless
// it is a hold.
func (c Charge) captured() int64 {
	if c.AmountCaptured != nil {
		return *c.AmountCaptured
	}
	return c.Amount
}

// ietfHoldAnswer renders a capture or a void of the IETF dialect: the
// charge as it is after it, or a 403 problem with the decline code.
func ietfHoldAnswer(c Charge, _ holdEntry, m *holdMove, decline string) *storedResponse {
	if decline != "" {
		prob := newProblem(m.refusal, holdDeclineDetails[decline])
		prob.DeclineCode, prob.ChargeID = decline, c.ID
		return &storedResponse{status: prob.Status, contentType: contentTypeProblem, body: prob.encode(), chargeID: c.ID, outcome: m.refused}
	}
	body, _ := json.Marshal(c)
	return &storedResponse{status: http.StatusOK, contentType: contentTypeJSON, body: body, chargeID: c.ID, outcome: m.made}
}

// holdDeclineDetails words each decline of a capture or a void.
var holdDeclineDetails = map[string]string{
	declineHoldExpired:    "the authorization expired at its capture_before",
	declineHoldVoided:     "the authorization was voided",
	declineHoldCaptured:   "the authorization was captured already",
	declineAmountTooLarge: "the amount is more than the authorization",
	declineNotAHold:       "the charge is not an authorization: it was not made with capture false",
}
