package fakeprovider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"chargeonce/internal/webhook"
)

// RefundStatus is where a refund stands.
type RefundStatus string

// The refund statuses. A refund moves from pending to succeeded or failed,
// and from succeeded to failed when the money could not be returned after
// all.
const (
	RefundPending   RefundStatus = "pending"
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
)

// Refund is a refund object as the contract defines it.
type Refund struct {
	// ID is re_000001, re_000002, … in creation order.
	ID string `json:"id"`
	// Object is always "refund".
	Object string `json:"object"`
	// Charge is the charge the money comes back from.
	Charge string `json:"charge"`
	// Amount is in minor units of Currency, the charge's currency.
	Amount   int64        `json:"amount"`
	Currency string       `json:"currency"`
	Status   RefundStatus `json:"status"`
	// FailureReason says why a failed refund failed; null otherwise. A
	// refusal's is its code, such as "charge_already_refunded".
	FailureReason *string `json:"failure_reason"`
	Reason        string  `json:"reason,omitempty"`
	// MerchantReference is how the refund is found again.
	MerchantReference string `json:"merchant_reference"`
	// IdempotencyKey is the key of the request that made the refund.
	IdempotencyKey string `json:"idempotency_key"`
	// Created is when the refund came to exist.
	Created time.Time `json:"created"`
}

// refundEntry is a refund with what the report needs and the refund object
// does not show: when it succeeded, and when it failed after succeeding.
// It is the form the data file keeps.
type refundEntry struct {
	Refund      Refund    `json:"refund"`
	SucceededAt time.Time `json:"succeeded_at,omitzero"`
	// FailedAt is set only for a refund that failed after it succeeded.
	FailedAt time.Time `json:"failed_at,omitzero"`
}

// refundRequest is the body of POST /v1/refunds. Its fields are declared in
// alphabetical order of their JSON names, so that encoding it yields the
// canonical form the fingerprint is taken over. Keep them sorted.
type refundRequest struct {
	Amount            int64  `json:"amount"`
	Charge            string `json:"charge"`
	Currency          string `json:"currency"`
	MerchantReference string `json:"merchant_reference"`
	Reason            string `json:"reason,omitempty"`
}

// refundSalt tells a refund's fingerprint from a charge's under the same
// key, on top of the dialect's salt.
const refundSalt = "refund\n"

// validate reports the first invalid field, in the order of the contract.
// The Stripe dialect may leave the currency out: it is the charge's.
func (r refundRequest) validate(currencyRequired bool) *problem {
	switch {
	case r.Charge == "":
		return invalidField("charge", msgRefundChargeMissing)
	case len(r.Charge) > maxReferenceLength:
		return invalidField("charge", msgRefundChargeTooLong)
	}
	if p := amountProblem(r.Amount, r.Currency, currencyRequired); p != nil {
		return p
	}
	switch {
	case r.MerchantReference == "":
		return invalidField("merchant_reference", msgReferenceMissing)
	case len(r.MerchantReference) > maxReferenceLength:
		return invalidField("merchant_reference", msgReferenceTooLong)
	case utf8.RuneCountInString(r.Reason) > maxDescriptionLength:
		return invalidField("reason", msgReasonLong)
	}
	return nil
}

// decodeRefund reads and validates a refund request of the IETF dialect.
func decodeRefund(w http.ResponseWriter, r *http.Request) (refundRequest, *problem) {
	var req refundRequest
	if p := decodeJSON(w, r, &req); p != nil {
		return refundRequest{}, p
	}
	if p := req.validate(true); p != nil {
		return refundRequest{}, p
	}
	return req, nil
}

// postRefund serves POST /v1/refunds in the IETF dialect: the same key
// rules, idempotency layer and chaos modes as POST /v1/charges.
func (p *Provider) postRefund(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	key, ok := p.ietfKey(w, r, rec)
	if !ok {
		return
	}
	req, bodyProblem := decodeRefund(w, r)
	if bodyProblem != nil {
		rec.fail(w, outcomeBadRequest, bodyProblem)
		return
	}
	p.refundOnce(w, r, rec, ietf, key, req)
}

// refundOnce runs a valid refund request through the idempotency layer.
func (p *Provider) refundOnce(w http.ResponseWriter, r *http.Request, rec *RequestRecord, d *dialect, key string, req refundRequest) {
	p.once(w, r, rec, d, key, fingerprint(d.salt+refundSalt, req), p.refundOperation(key, req, d))
}

// refundOperation makes the refund of req: refused when the charge cannot
// give back that much, else succeeded at once, or pending while refunds are
// held. A refusal is a failed refund in the dialects that keep one (see
// dialect.keepsRefusals), so that a lookup tells it from a request that
// never arrived.
func (p *Provider) refundOperation(key string, req refundRequest, d *dialect) operation {
	return func() (*storedResponse, func(execer) error, func()) {
		seq := len(p.refunds) + 1
		now := p.now().UTC()
		charge, refusal := p.refundableLocked(req, d)
		e := refundEntry{Refund: Refund{
			ID:                p.newID("re_", seq),
			Object:            "refund",
			Charge:            req.Charge,
			Amount:            req.Amount,
			Currency:          req.Currency,
			Status:            RefundSucceeded,
			Reason:            req.Reason,
			MerchantReference: req.MerchantReference,
			IdempotencyKey:    key,
			Created:           now,
		}}
		if e.Refund.Currency == "" {
			e.Refund.Currency = charge.Currency
		}
		switch {
		case refusal != "":
			e.Refund.Status = RefundFailed
			reason := string(refusal)
			e.Refund.FailureReason = &reason
			if !d.keepsRefusals {
				e.Refund.ID = ""
				return d.refundAnswer(e.Refund, refusal), func(execer) error { return nil }, func() {}
			}
		case p.refundsHeld:
			e.Refund.Status = RefundPending
		default:
			e.SucceededAt = now
		}
		save := func(db execer) error { return insertRefund(db, seq, e) }
		apply := func() {
			p.addRefundLocked(e)
			p.announceRefundLocked(e.Refund)
		}
		return d.refundAnswer(e.Refund, refusal), save, apply
	}
}

// refundableLocked finds the charge that req refunds, through d's door,
// and says why it cannot be refunded by req, or "" when it can. The
// refunds of a charge that have not failed, pending ones included, never
// sum to more than the charge captured: a hold not captured has nothing
// to refund.
func (p *Provider) refundableLocked(req refundRequest, d *dialect) (Charge, problemCode) {
	p.expireHoldsLocked()
	i, ok := p.byID[req.Charge]
	if !ok || !strings.HasPrefix(req.Charge, d.idPrefix) || p.charges[i].Status != ChargeSucceeded {
		return Charge{}, codeChargeNotRefundable
	}
	c := p.charges[i]
	if req.Currency != "" && req.Currency != c.Currency {
		return c, codeCurrencyMismatch
	}
	remaining := c.captured() - p.refundedLocked(c.ID)
	switch {
	case remaining <= 0:
		return c, codeChargeAlreadyRefunded
	case req.Amount > remaining:
		return c, codeRefundTooLarge
	}
	return c, ""
}

// refundedLocked sums the refunds of a charge that hold: pending and
// succeeded ones.
func (p *Provider) refundedLocked(chargeID string) int64 {
	var sum int64
	for _, i := range p.refundsByCharge[chargeID] {
		if r := p.refunds[i].Refund; r.Status != RefundFailed {
			sum += r.Amount
		}
	}
	return sum
}

// addRefundLocked appends e to the refunds and indexes it.
func (p *Provider) addRefundLocked(e refundEntry) {
	n := len(p.refunds)
	p.refundByID[e.Refund.ID] = n
	p.refundsByRef[e.Refund.MerchantReference] = append(p.refundsByRef[e.Refund.MerchantReference], n)
	p.refundsByCharge[e.Refund.Charge] = append(p.refundsByCharge[e.Refund.Charge], n)
	p.refunds = append(p.refunds, e)
}

// announceRefundLocked sends the event of a refund that has just settled:
// refund.succeeded or refund.failed. A pending refund sends none yet.
func (p *Provider) announceRefundLocked(r Refund) {
	switch r.Status {
	case RefundSucceeded:
		p.webhooks.enqueue(webhook.EventRefundSucceeded, r, r.Charge, r.ID)
	case RefundFailed:
		p.webhooks.enqueue(webhook.EventRefundFailed, r, r.Charge, r.ID)
	}
}

// insertRefund writes a new refund.
func insertRefund(db execer, seq int, e refundEntry) error {
	raw, _ := json.Marshal(e)
	_, err := db.Exec(`INSERT INTO refunds (seq, refund) VALUES (?, ?)`, seq, string(raw))
	return err
}

// refundList is the body of GET /v1/refunds and GET /_admin/refunds.
type refundList struct {
	Object string   `json:"object"`
	Data   []Refund `json:"data"`
}

// listRefunds serves GET /v1/refunds?merchant_reference=REF, paced like the
// charge lookups and counted against the same rate.
func (p *Provider) listRefunds(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	ref, ok := p.lookupReference(w, r, rec, ietf, "merchant_reference", msgReferenceParam)
	if !ok {
		return
	}
	p.mu.Lock()
	list := refundList{Object: "list", Data: []Refund{}}
	for _, i := range p.refundsByRef[ref] {
		list.Data = append(list.Data, p.refunds[i].Refund)
	}
	p.mu.Unlock()
	rec.Outcome = outcomeRefundsListed
	writeJSON(w, http.StatusOK, list)
}

// getRefund serves GET /v1/refunds/{id}.
func (p *Provider) getRefund(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	refund, ok := p.lookupRefund(r.PathValue("id"))
	if !ok {
		rec.fail(w, outcomeRefundNotFound, newProblem(codeNotFound, msgRefundNotFound))
		return
	}
	rec.Outcome = outcomeRefundFound
	rec.ChargeID, rec.RefundID = refund.Charge, refund.ID
	writeJSON(w, http.StatusOK, refund)
}

// lookupRefund returns the refund with this id.
func (p *Provider) lookupRefund(id string) (Refund, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.refundByID[id]
	if !ok {
		return Refund{}, false
	}
	return p.refunds[i].Refund, true
}

// Refunds returns every refund, oldest first.
func (p *Provider) Refunds() []Refund {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Refund, len(p.refunds))
	for i, e := range p.refunds {
		out[i] = e.Refund
	}
	return out
}

// RefundRequests returns the requests that posted a refund, in either
// dialect, in the order they finished.
func (p *Provider) RefundRequests() []RequestRecord {
	var out []RequestRecord
	for _, r := range p.Requests() {
		if r.IsRefund() {
			out = append(out, r)
		}
	}
	return out
}

// IsRefund reports whether r posted a refund, in either dialect.
func (r RequestRecord) IsRefund() bool {
	return r.Method == http.MethodPost && r.Path == refundPath
}

// refundPath is the path of refunds in both dialects.
const refundPath = "/v1/refunds"

// HoldRefunds makes new refunds wait, pending, until SettleRefund settles
// them (hold true), or succeed at once again (hold false), as they do by
// default. Refunds already pending stay pending. The setting is kept in
// memory only, through Reset too.
func (p *Provider) HoldRefunds(hold bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refundsHeld = hold
}

// RefundsHeld reports whether new refunds are held pending.
func (p *Provider) RefundsHeld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refundsHeld
}

// ErrNoSuchRefund is SettleRefund's error for an id that no refund has.
var ErrNoSuchRefund = errors.New(msgRefundNotFound)

// SettleRefund moves a refund on and announces it: a pending refund to
// succeeded or failed, or a succeeded refund to failed, as when the money
// could not be returned after all. A failure needs its reason, such as
// "expired_or_canceled_card". Any other move is a *FieldError and changes
// nothing; so is a change the data file refuses.
func (p *Provider) SettleRefund(id string, status RefundStatus, failureReason string) (Refund, error) {
	switch {
	case status != RefundSucceeded && status != RefundFailed:
		return Refund{}, &FieldError{"status", msgSettleStatus}
	case status == RefundFailed && failureReason == "":
		return Refund{}, &FieldError{"failure_reason", msgFailureReasonMissing}
	case status == RefundSucceeded && failureReason != "":
		return Refund{}, &FieldError{"failure_reason", msgFailureReasonSucceeded}
	case len(failureReason) > maxReferenceLength:
		return Refund{}, &FieldError{"failure_reason", msgFailureReasonLong}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.refundByID[id]
	if !ok {
		return Refund{}, ErrNoSuchRefund
	}
	e := p.refunds[i]
	now := p.now().UTC()
	switch {
	case e.Refund.Status == RefundPending && status == RefundSucceeded:
		e.SucceededAt = now
	case e.Refund.Status == RefundPending:
	case e.Refund.Status == RefundSucceeded && status == RefundFailed:
		e.FailedAt = now
	default:
		return Refund{}, &FieldError{"status", fmt.Sprintf(msgSettleMove, e.Refund.Status, status)}
	}
	e.Refund.Status = status
	if status == RefundFailed {
		e.Refund.FailureReason = &failureReason
	}
	if p.file != nil {
		if err := updateRefund(p.file.db, i+1, e); err != nil {
			return Refund{}, fmt.Errorf("settle refund: %w", err)
		}
	}
	p.refunds[i] = e
	p.announceRefundLocked(e.Refund)
	return e.Refund, nil
}

// updateRefund rewrites a refund whose status moved.
func updateRefund(db execer, seq int, e refundEntry) error {
	raw, _ := json.Marshal(e)
	_, err := db.Exec(`UPDATE refunds SET refund = ? WHERE seq = ?`, string(raw), seq)
	return err
}

// Outcomes of the refund admin endpoints, for their log lines.
const (
	outcomeAllRefunds    = "all refunds listed"
	outcomeRefundsHeld   = "refund hold changed"
	outcomeRefundSettled = "refund settled"
	outcomeSettleRefused = "refused invalid refund settlement"
)

// listAllRefunds serves GET /_admin/refunds.
func (p *Provider) listAllRefunds(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeAllRefunds
	writeJSON(w, http.StatusOK, refundList{Object: "list", Data: p.Refunds()})
}

// refundHold is the body of PUT /_admin/refunds/hold.
type refundHold struct {
	Hold bool `json:"hold"`
}

// putRefundHold serves PUT /_admin/refunds/hold.
func (p *Provider) putRefundHold(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var body refundHold
	if prob := decodeJSON(w, r, &body); prob != nil {
		rec.fail(w, outcomeSettleRefused, prob)
		return
	}
	p.HoldRefunds(body.Hold)
	rec.Outcome = outcomeRefundsHeld
	writeJSON(w, http.StatusOK, body)
}

// getRefundHold serves GET /_admin/refunds/hold.
func (p *Provider) getRefundHold(w http.ResponseWriter, _ *http.Request, rec *RequestRecord) {
	rec.Outcome = outcomeRefundsHeld
	writeJSON(w, http.StatusOK, refundHold{Hold: p.RefundsHeld()})
}

// refundSettlement is the body of POST /_admin/refunds/{id}/settle.
type refundSettlement struct {
	Status        RefundStatus `json:"status"`
	FailureReason string       `json:"failure_reason"`
}

// settleRefund serves POST /_admin/refunds/{id}/settle.
func (p *Provider) settleRefund(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var body refundSettlement
	if prob := decodeJSON(w, r, &body); prob != nil {
		rec.fail(w, outcomeSettleRefused, prob)
		return
	}
	refund, err := p.SettleRefund(r.PathValue("id"), body.Status, body.FailureReason)
	if errors.Is(err, ErrNoSuchRefund) {
		rec.fail(w, outcomeRefundNotFound, newProblem(codeNotFound, msgRefundNotFound))
		return
	}
	if err != nil {
		p.settlementRefused(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeRefundSettled
	rec.ChargeID, rec.RefundID = refund.Charge, refund.ID
	writeJSON(w, http.StatusOK, refund)
}
