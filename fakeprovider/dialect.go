package fakeprovider

import (
	"encoding/json"
	"net/http"
)

// dialect is how one front door of the provider speaks: the IETF draft's
// contract at /v1/charges, Stripe's at /v1/payment_intents, and both at
// /v1/refunds. Both run the
// same state machine (keys, fingerprints, requests in flight, charges, chaos
// modes) and differ only in how they read requests and render answers.
type dialect struct {
	// salt tells the dialects' fingerprints apart.
	salt string
	// idPrefix starts the ids of the charges made through this door.
	idPrefix string
	// answer renders a charge just made, succeeded or declined, as the
	// answer stored under its key.
	answer func(Charge) *storedResponse
	// problem renders an error answer.
	problem func(*problem) *storedResponse
	// refundAnswer renders a refund just made, or refused with refusal,
	// as the answer stored under its key.
	refundAnswer func(r Refund, refusal problemCode) *storedResponse
	// holdAnswer renders a capture or a void of c, whose hold is h, just
	// made, or declined with decline, as the answer stored under its key.
	holdAnswer func(c Charge, h holdEntry, m *holdMove, decline string) *storedResponse
	// notFound is the problem of an id that no charge of this door has.
	notFound func() *problem
	// keepsRefusals says whether a refused refund becomes a failed refund
	// that lookups find, as a declined charge becomes a failed charge.
	keepsRefusals bool
}

// fail answers with a problem in d's dialect and records why.
func (d *dialect) fail(w http.ResponseWriter, rec *RequestRecord, outcome string, p *problem) {
	rec.Outcome = outcome
	rec.Detail = p.Detail
	resp := d.problem(p)
	writeBody(w, resp.status, resp.contentType, resp.body)
}

// ietf is the dialect of docs/provider-http.md.
var ietf = &dialect{
	idPrefix: "ch_",
	answer: func(c Charge) *storedResponse {
		if c.Status == ChargeFailed {
			prob := newProblem(codeCardDeclined, "the card was declined: "+c.DeclineCode)
			prob.DeclineCode = c.DeclineCode
			prob.ChargeID = c.ID
			return &storedResponse{status: prob.Status, contentType: contentTypeProblem, body: prob.encode(), chargeID: c.ID, outcome: outcomeDeclined}
		}
		body, _ := json.Marshal(c)
		return &storedResponse{status: http.StatusCreated, contentType: contentTypeJSON, body: body, chargeID: c.ID, outcome: outcomeCreated}
	},
	problem: func(p *problem) *storedResponse {
		return &storedResponse{status: p.Status, contentType: contentTypeProblem, body: p.encode()}
	},
	refundAnswer: func(r Refund, refusal problemCode) *storedResponse {
		if refusal != "" {
			prob := newProblem(refusal, refusalDetails[refusal])
			prob.ChargeID, prob.RefundID = r.Charge, r.ID
			return &storedResponse{status: prob.Status, contentType: contentTypeProblem, body: prob.encode(), chargeID: r.Charge, refundID: r.ID, outcome: outcomeRefundRefused}
		}
		body, _ := json.Marshal(r)
		return &storedResponse{status: http.StatusCreated, contentType: contentTypeJSON, body: body, chargeID: r.Charge, refundID: r.ID, outcome: outcomeRefundCreated}
	},
	holdAnswer:    ietfHoldAnswer,
	notFound:      func() *problem { return newProblem(codeNotFound, msgChargeNotFound) },
	keepsRefusals: true,
}
