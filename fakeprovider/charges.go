package fakeprovider

import (
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ChargeStatus is the result of a charge.
type ChargeStatus string

// The charge statuses.
const (
	ChargeSucceeded ChargeStatus = "succeeded"
	// ChargeFailed marks a declined charge. Declines create a charge too, so
	// that reconciliation can tell "declined" from "never arrived".
	ChargeFailed ChargeStatus = "failed"
	// ChargeAuthorized marks a hold: the amount is authorized, nothing is
	// captured yet. A capture makes it succeeded, a void voided, and
	// capture_before passing expired.
	ChargeAuthorized ChargeStatus = "authorized"
	ChargeVoided     ChargeStatus = "voided"
	ChargeExpired    ChargeStatus = "expired"
)

// Charge is a charge object as the contract defines it.
type Charge struct {
	// ID is ch_000001, ch_000002, … in creation order.
	ID string `json:"id"`
	// Object is always "charge".
	Object string `json:"object"`
	// Amount is in minor units of Currency, an ISO 4217 code.
	Amount   int64        `json:"amount"`
	Currency string       `json:"currency"`
	Status   ChargeStatus `json:"status"`
	// DeclineCode says why a failed charge was declined.
	DeclineCode string `json:"decline_code,omitempty"`
	// AmountCaptured is how much of a hold was captured: 0 until its
	// capture, and for ever once voided or expired. It is nil for a charge
	// that was not a hold, captured in full at once.
	AmountCaptured *int64 `json:"amount_captured,omitempty"`
	// CaptureBefore is when a hold expires unless captured or voided
	// first: Created plus the hold window. Zero when not a hold.
	CaptureBefore     time.Time `json:"capture_before,omitzero"`
	Description       string    `json:"description,omitempty"`
	MerchantReference string    `json:"merchant_reference"`
	IdempotencyKey    string    `json:"idempotency_key"`
	// Created is when processing finished and the charge came to exist.
	Created time.Time `json:"created"`
}

// RequestRecord describes one request to the provider API.
type RequestRecord struct {
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Key is the parsed Idempotency-Key, empty when missing or malformed.
	Key string `json:"key,omitempty"`
	// Fingerprint is the hex SHA-256 of the canonical body, once it was valid.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Status is the status sent, or 0 when no answer was sent: the request was
	// dropped, the response was lost, or the client gave up first.
	Status     int     `json:"status"`
	Replayed   bool    `json:"replayed"`
	DurationMS float64 `json:"duration_ms"`
	// Outcome says what happened, in the words of the log line.
	Outcome string `json:"outcome"`
	// Detail is the problem detail sent with an error answer.
	Detail string `json:"detail,omitempty"`
	// ChargeID is the charge the request created, replayed or read; for a
	// refund, the charge refunded.
	ChargeID string `json:"charge_id,omitempty"`
	// RefundID is the refund the request created, replayed or read.
	RefundID string `json:"refund_id,omitempty"`
}

// IsCharge reports whether r posted a charge, in either dialect.
func (r RequestRecord) IsCharge() bool {
	return r.Method == http.MethodPost && (r.Path == "/v1/charges" || r.Path == stripeChargePath)
}

// Outcomes: the messages of the request log lines and RequestRecord.Outcome.
const (
	outcomeCreated        = "charge created"
	outcomeDeclined       = "card declined"
	outcomeReplayed       = "replayed stored response for key"
	outcomeInFlight       = "request still in flight for key"
	outcomeKeyReused      = "idempotency key reused with a different body"
	outcomeBadKey         = "rejected malformed idempotency key"
	outcomeBadRequest     = "rejected invalid request"
	outcomeSourceRefused  = "refused payment source; nothing processed"
	outcomeClientGone     = "client gave up; charge continues in the background"
	outcomeLost           = "response lost after charge"
	outcomeDropped        = "dropped request"
	outcomeDroppedTimeout = "dropped request answered with gateway timeout"
	outcomeRateLimited    = "rate limited request"
	outcomeLookupLimited  = "lookup refused over the published lookup rate"
	outcomeInjectedError  = "injected provider error; nothing processed"
	outcomeShuttingDown   = "refused charge during shutdown"
	outcomeChargeFound    = "charge found"
	outcomeChargeNotFound = "charge not found"
	outcomeChargesListed  = "charges listed by merchant reference"
	outcomeLimitsServed   = "limits published"
	outcomeDataFileFailed = "data file write failed; nothing changed"
	outcomeRefundCreated  = "refund created"
	outcomeRefundRefused  = "refund refused"
	outcomeRefundsListed  = "refunds listed by merchant reference"
	outcomeRefundFound    = "refund found"
	outcomeRefundNotFound = "refund not found"
	outcomeCaptured       = "hold captured"
	outcomeCaptureRefused = "capture refused"
	outcomeVoided         = "hold voided"
	outcomeVoidRefused    = "void refused"
)

// declineCodes maps the test tokens that decline to their decline code. In
// the Stripe dialect, pm_card_<name> is tok_<name>. issuer_not_available,
// processing_error and try_again_later are the provider's own trouble
// rather than the card's, for the tests of what a payment makes of a
// decline that another provider might have taken; the others are the
// card's.
var declineCodes = map[string]string{
	"tok_chargeDeclined":                   "do_not_honor",
	"tok_chargeDeclinedInsufficientFunds":  "insufficient_funds",
	"tok_chargeDeclinedLostCard":           "lost_card",
	"tok_chargeDeclinedStolenCard":         "stolen_card",
	"tok_chargeDeclinedIssuerNotAvailable": "issuer_not_available",
	"tok_chargeDeclinedProcessingError":    "processing_error",
	"tok_chargeDeclinedTryAgainLater":      "try_again_later",
}

// keyEntry is what the provider remembers about an idempotency key.
type keyEntry struct {
	fingerprint string
	firstSeen   time.Time
	// resp is nil while the request is being processed; it is set, under
	// Provider.mu, just before done is closed.
	resp *storedResponse
	done chan struct{}
}

// storedResponse is the first answer for a key, replayed byte for byte.
type storedResponse struct {
	status      int
	contentType string
	body        []byte
	// chargeID is the charge made, or the charge a refund is of.
	chargeID string
	// refundID is the refund made.
	refundID string
	outcome  string
}

// made reports whether the answer is about a charge or a refund that was
// made, rather than a failure to make one.
func (s *storedResponse) made() bool {
	return s.chargeID != "" || s.refundID != ""
}

// postCharge serves POST /v1/charges.
func (p *Provider) postCharge(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	key, ok := p.ietfKey(w, r, rec)
	if !ok {
		return
	}
	req, bodyProblem := decodeCharge(w, r)
	if bodyProblem != nil {
		rec.fail(w, requestOutcome(bodyProblem), bodyProblem)
		return
	}
	p.chargeOnce(w, r, rec, ietf, key, req)
}

// chargeOnce runs a valid charge request through the idempotency layer.
func (p *Provider) chargeOnce(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect, key string, req chargeRequest) {
	p.once(w, r, rec, d, key, fingerprint(d.salt, req), p.chargeOperation(key, req, d))
}

// operation makes what a new key asks for. It runs under p.mu once the
// processing delay is over, and returns the answer to store under the key,
// the rows that make it durable (written in one transaction with the key,
// when there is a data file), and the change to the state in memory,
// applied only once those rows are written.
type operation func() (resp *storedResponse, save func(execer) error, apply func())

// once is the idempotency layer every keyed request of every dialect runs
// through, charges and refunds alike: it replays the stored answer of a
// finished key, refuses a key in flight or reused with another request,
// and otherwise runs op and answers in d's dialect.
func (p *Provider) once(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect, key, fingerprint string, op operation) {
	rec.Fingerprint = fingerprint

	p.mu.Lock()
	entry, seen := p.keys[key]
	if seen && entry.resp != nil && p.now().Sub(entry.firstSeen) >= p.retention {
		delete(p.keys, key)
		seen = false
	}
	switch {
	case seen && entry.fingerprint != fingerprint:
		p.mu.Unlock()
		d.fail(w, rec, outcomeKeyReused, newProblem(codeKeyReused, msgKeyReused))
		return
	case seen && entry.resp == nil:
		p.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		d.fail(w, rec, outcomeInFlight, newProblem(codeKeyInFlight, msgKeyInFlight))
		return
	case seen:
		p.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		rec.Replayed = true
		rec.Outcome = outcomeReplayed
		rec.ChargeID, rec.RefundID = entry.resp.chargeID, entry.resp.refundID
		writeBody(w, entry.resp.status, entry.resp.contentType, entry.resp.body)
		return
	case p.closing:
		p.mu.Unlock()
		d.fail(w, rec, outcomeShuttingDown, newProblem(codeUnavailable, msgShuttingDown))
		return
	}
	entry = &keyEntry{fingerprint: fingerprint, firstSeen: p.now(), done: make(chan struct{})}
	p.keys[key] = entry
	var delay time.Duration
	if p.mode.Name == ModeSlow {
		delay = p.mode.Delay
	}
	lose := p.mode.Name == ModeLostResponse && p.chance(p.mode.Rate)
	p.startWorkLocked()
	p.mu.Unlock()

	// The request is processed apart from the HTTP exchange, so that a
	// client that disconnects or times out never cancels it: it completes
	// and its result is stored under the key.
	go p.process(entry, key, delay, d, op)

	select {
	case <-entry.done:
	case <-r.Context().Done():
		rec.Outcome = outcomeClientGone
		return
	}
	rec.ChargeID, rec.RefundID = entry.resp.chargeID, entry.resp.refundID
	// Only a response to something made is lost; a failure to make it is
	// answered.
	if lose && entry.resp.made() {
		rec.Outcome = outcomeLost
		// Aborting with http.ErrAbortHandler, rather than hijacking the
		// connection, works the same over HTTP/1.1 and HTTP/2 and through any
		// ResponseWriter wrapper; net/http closes the connection (or resets the
		// stream) without sending the unwritten response and without logging
		// a stack trace.
		panic(http.ErrAbortHandler)
	}
	rec.Outcome = entry.resp.outcome
	writeBody(w, entry.resp.status, entry.resp.contentType, entry.resp.body)
}

// process runs op after delay and stores its answer under the key. With a
// data file the result exists once it is written there; when that fails
// nothing is made, the key is forgotten so that a retry is processed
// afresh, and the request is answered 503.
func (p *Provider) process(entry *keyEntry, key string, delay time.Duration, d *dialect, op operation) {
	if delay > 0 {
		<-p.after(delay)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.finishWorkLocked()
	defer close(entry.done)
	resp, save, apply := op()
	entry.resp = resp
	if p.file != nil {
		if err := p.file.saveKeyed(key, entry, save); err != nil {
			p.log.Error("data file write failed; nothing made", "key", key, "err", err)
			delete(p.keys, key)
			entry.resp = d.problem(newProblem(codeUnavailable, msgDataFileFailed))
			entry.resp.outcome = outcomeDataFileFailed
			return
		}
	}
	apply()
}

// chargeOperation makes the charge of req, succeeded or declined.
func (p *Provider) chargeOperation(key string, req chargeRequest, d *dialect) operation {
	return func() (*storedResponse, func(execer) error, func()) {
		seq := len(p.charges) + 1
		charge := Charge{
			ID:                p.newID(d.idPrefix, seq),
			Object:            "charge",
			Amount:            req.Amount,
			Currency:          req.Currency,
			Status:            ChargeSucceeded,
			Description:       req.Description,
			MerchantReference: req.MerchantReference,
			IdempotencyKey:    key,
			Created:           p.now().UTC(),
		}
		if code, declined := declineCodes[req.Source]; declined {
			charge.Status = ChargeFailed
			charge.DeclineCode = code
		} else if req.hold() {
			charge.Status = ChargeAuthorized
			charge.AmountCaptured = new(int64)
			charge.CaptureBefore = charge.Created.Add(p.holdWindow)
		}
		save := func(db execer) error { return insertCharge(db, seq, charge) }
		apply := func() {
			p.addChargeLocked(charge)
			p.webhooks.enqueue(chargeEventType(charge), charge, charge.ID, "")
		}
		return d.answer(charge), save, apply
	}
}

// addChargeLocked appends c to the charges and indexes it.
func (p *Provider) addChargeLocked(c Charge) {
	if c.Status == ChargeAuthorized {
		p.authorized[c.ID] = len(p.charges)
	}
	p.byID[c.ID] = len(p.charges)
	p.byRef[c.MerchantReference] = append(p.byRef[c.MerchantReference], len(p.charges))
	p.charges = append(p.charges, c)
}

// ietfKey reads the Idempotency-Key of a POST in the IETF dialect, after
// the chaos modes have had their chance; it answers and returns false when
// the key cannot be used.
func (p *Provider) ietfKey(w http.ResponseWriter, r *http.Request, rec *RequestRecord) (string, bool) {
	key, keyProblem := parseKey(r.Header.Values("Idempotency-Key"))
	rec.Key = key
	if p.misbehave(w, r, rec, ietf) {
		return "", false
	}
	if keyProblem != nil {
		rec.fail(w, outcomeBadKey, keyProblem)
		return "", false
	}
	return key, true
}

// misbehave applies the chaos modes that stop a request before it reaches
// the idempotency layer, answering in d's dialect, and reports whether it
// answered (or dropped) it.
func (p *Provider) misbehave(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect) bool {
	p.mu.Lock()
	mode := p.mode
	hit := (mode.Name == ModeError || mode.Name == ModeRateLimit) && p.chance(mode.Rate)
	p.mu.Unlock()
	switch {
	case mode.Name == ModeDrop:
		p.drop(w, r, rec, mode.Delay, d)
		return true
	case mode.Name == ModeRateLimit && hit:
		w.Header().Set("Retry-After", "1")
		d.fail(w, rec, outcomeRateLimited, newProblem(codeRateLimited, msgRateLimited))
		return true
	case mode.Name == ModeError && hit:
		d.fail(w, rec, outcomeInjectedError, newProblem(codeUnavailable, msgUnavailable))
		return true
	}
	return false
}

// drop holds a lost request until the client gives up, the provider closes,
// or delay (when positive) has passed and a 504 is sent.
func (p *Provider) drop(w http.ResponseWriter, r *http.Request, rec *RequestRecord, delay time.Duration, d *dialect) {
	// net/http notices a client that goes away only once the body has been
	// read to its end.
	_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var timeout <-chan time.Time
	if delay > 0 {
		timeout = p.after(delay)
	}
	rec.Outcome = outcomeDropped
	select {
	case <-timeout:
		d.fail(w, rec, outcomeDroppedTimeout, newProblem(codeTimeout, msgTimeout))
	case <-r.Context().Done():
	case <-p.closed:
		// Returning would send an empty 200; a lost request gets no answer.
		panic(http.ErrAbortHandler)
	}
}

// getCharge serves GET /v1/charges/{id}.
func (p *Provider) getCharge(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	charge, _, ok := p.lookupCharge(r.PathValue("id"))
	if !ok {
		rec.fail(w, outcomeChargeNotFound, ietf.notFound())
		return
	}
	rec.Outcome = outcomeChargeFound
	rec.ChargeID = charge.ID
	writeJSON(w, http.StatusOK, charge)
}

// lookupCharge returns the charge with this id and its hold entry,
// expired if its hold has passed its capture_before.
func (p *Provider) lookupCharge(id string) (Charge, holdEntry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireHoldsLocked()
	i, ok := p.byID[id]
	if !ok {
		return Charge{}, holdEntry{}, false
	}
	return p.charges[i], p.holds[id], true
}

// chargeList is the body of GET /v1/charges and GET /_admin/charges.
type chargeList struct {
	Data []Charge `json:"data"`
}

// listCharges serves GET /v1/charges?merchant_reference=REF. It reads the
// reference index, so its cost depends on the charges for that reference,
// not on how many charges exist.
func (p *Provider) listCharges(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	ref, ok := p.lookupReference(w, r, rec, ietf, "merchant_reference", msgReferenceParam)
	if !ok {
		return
	}
	p.mu.Lock()
	p.expireHoldsLocked()
	indexes := p.byRef[ref]
	list := chargeList{Data: make([]Charge, len(indexes))}
	for n, i := range indexes {
		list.Data[n] = p.charges[i]
	}
	p.mu.Unlock()
	rec.Outcome = outcomeChargesListed
	writeJSON(w, http.StatusOK, list)
}

// lookupReference admits a lookup under the published lookup rate, which
// every lookup of either dialect counts against, a malformed one too, as
// it would at a real provider's gateway; then it reads the lookup's one
// query parameter, param. When it cannot, it answers in d's dialect and
// returns false.
func (p *Provider) lookupReference(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect, param, msg string) (string, bool) {
	if !p.lookups.AllowN(p.now(), 1) {
		// The time one token takes to come back, in the whole seconds that
		// Retry-After speaks.
		w.Header().Set("Retry-After", strconv.Itoa(int(max(1, math.Ceil(1/p.LookupRate())))))
		d.fail(w, rec, outcomeLookupLimited, newProblem(codeRateLimited, msgLookupLimited))
		return "", false
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	values := query[param]
	if err != nil || len(values) != 1 || values[0] == "" {
		d.fail(w, rec, outcomeBadRequest, invalidField(param, msg))
		return "", false
	}
	return values[0], true
}

// getIdempotency serves GET /v1/idempotency, the published limits: the key
// retention, the lookup rate and the hold window.
func (p *Provider) getIdempotency(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeLimitsServed
	writeJSON(w, http.StatusOK, struct {
		KeyRetentionSeconds int64   `json:"key_retention_seconds"`
		LookupsPerSecond    float64 `json:"lookups_per_second"`
		HoldWindowSeconds   int64   `json:"hold_window_seconds"`
	}{int64(p.retention / time.Second), p.LookupRate(), int64(p.holdWindow / time.Second)})
}

// HoldWindow returns how long an authorization lasts.
func (p *Provider) HoldWindow() time.Duration {
	return p.holdWindow
}
