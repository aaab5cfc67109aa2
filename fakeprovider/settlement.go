package fakeprovider

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/internal/idemkey"
	"chargeonce/provider/settlement"
)

// FeeRule is the provider's fee on each charge: a percentage, in basis
// points (290 is 2.9%), rounded half up to the minor unit, plus a fixed
// number of minor units. A fee never exceeds the charge.
type FeeRule struct {
	BasisPoints int64 `json:"basis_points"`
	FixedMinor  int64 `json:"fixed_minor"`
}

// DefaultFee is the fee rule of the command and the dev stack: 2.9% plus 30
// minor units, as card processors commonly charge. Config's zero FeeRule
// charges no fee.
var DefaultFee = FeeRule{BasisPoints: 290, FixedMinor: 30}

// Validate reports why the rule is unusable.
func (f FeeRule) Validate() error {
	if f.BasisPoints < 0 || f.BasisPoints > 10000 || f.FixedMinor < 0 {
		return fmt.Errorf("fee rule: basis points must be 0 to 10000 and the fixed fee not negative, got %d and %d", f.BasisPoints, f.FixedMinor)
	}
	return nil
}

// Fee is the fee on a charge of amount minor units, rounded half up, and
// never more than the amount. It is exact for every amount up to the int64
// maximum: the whole ten-thousands and the rest are scaled apart, as
// amount*BasisPoints alone would overflow, and a fixed fee whose sum
// overflows is over the amount anyway.
func (f FeeRule) Fee(amount int64) int64 {
	scaled := (amount/10000)*f.BasisPoints + (amount%10000*f.BasisPoints+5000)/10000
	fee, err := chargeonce.AddMinor(scaled, f.FixedMinor)
	if err != nil {
		return amount
	}
	return min(fee, amount)
}

// The alterations of a report that /_admin/settlements makes, to simulate
// the provider's own mistakes.
const (
	// AlterDrop leaves the charge's line out of the report.
	AlterDrop = "drop"
	// AlterDuplicate writes the charge's line twice.
	AlterDuplicate = "duplicate"
	// AlterChange replaces the line's gross or currency with the given text,
	// which may be malformed on purpose.
	AlterChange = "change"
)

// Alteration changes one charge's line, or one refund's lines, in the
// report of one date.
type Alteration struct {
	Date string `json:"date"`
	// ChargeID names a charge's line; RefundID, instead, names a refund's
	// lines (its refund line, and its refund_failure line if it failed
	// later).
	ChargeID string `json:"charge_id,omitempty"`
	RefundID string `json:"refund_id,omitempty"`
	Action   string `json:"action"`
	// Gross and Currency, for AlterChange, are written as given; empty
	// keeps the line's own.
	Gross    string `json:"gross,omitempty"`
	Currency string `json:"currency,omitempty"`
}

// PlantedCharge is a charge that the merchant never requested, made by
// POST /_admin/charges.
type PlantedCharge struct {
	Amount            int64        `json:"amount"`
	Currency          string       `json:"currency"`
	MerchantReference string       `json:"merchant_reference"`
	Status            ChargeStatus `json:"status"`
	// IdempotencyKey, optional, is shown as the charge's key, as if the
	// charge had been made by a request under it (an attempt's key, for a
	// charge that arrives late for it). No key is stored: a request with it
	// is processed as the key's retention says.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Created is the charge's time; zero means now.
	Created time.Time `json:"created,omitzero"`
	// SendEvent sends the charge's event, charge.succeeded or charge.failed,
	// as a charge that the provider finished late would.
	SendEvent bool `json:"send_event,omitempty"`
}

// Outcomes of the settlement endpoints, for their log lines.
const (
	outcomeReportServed   = "settlement report served"
	outcomeChargePlanted  = "charge planted"
	outcomeReportAltered  = "settlement report altered"
	outcomeReportRefused  = "refused invalid settlement request"
	msgReportDate         = "the date must be a UTC date such as 2026-03-14"
	msgAlterationAction   = "action must be drop, duplicate or change"
	msgAlterationChange   = "a change needs gross or currency"
	msgAlterationNoCharge = "the report of this date has no line for this charge"
	msgAlterationNoRefund = "the report of this date has no line for this refund"
	msgAlterationTarget   = "give charge_id or refund_id, not both"
	msgPlantedStatus      = "status must be succeeded or failed"
)

// FieldError is a planted charge or an alteration with an invalid field.
type FieldError struct {
	Field, Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// PlantCharge makes a charge that no request asked for, as a provider's bug
// or a double charge would, or that arrives for an attempt already given
// up, and returns it; with SendEvent it is announced like any charge.
func (p *Provider) PlantCharge(pc PlantedCharge) (Charge, error) {
	req := chargeRequest{Amount: pc.Amount, Currency: pc.Currency, MerchantReference: pc.MerchantReference, Source: "tok_planted"}
	if prob := req.validate(); prob != nil {
		return Charge{}, &FieldError{prob.Param, prob.Detail}
	}
	if pc.Status != ChargeSucceeded && pc.Status != ChargeFailed {
		return Charge{}, &FieldError{"status", msgPlantedStatus}
	}
	if len(pc.IdempotencyKey) > idemkey.MaxLength {
		return Charge{}, &FieldError{"idempotency_key", msgKeyTooLong}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Charge{
		ID:                p.newID(ietf.idPrefix, len(p.charges)+1),
		Object:            "charge",
		Amount:            pc.Amount,
		Currency:          pc.Currency,
		Status:            pc.Status,
		MerchantReference: pc.MerchantReference,
		IdempotencyKey:    pc.IdempotencyKey,
		Created:           pc.Created.UTC(),
	}
	if pc.Created.IsZero() {
		c.Created = p.now().UTC()
	}
	if p.file != nil {
		if err := insertCharge(p.file.db, len(p.charges)+1, c); err != nil {
			return Charge{}, fmt.Errorf("plant charge: %w", err)
		}
	}
	p.addChargeLocked(c)
	if pc.SendEvent {
		p.webhooks.enqueue(chargeEventType(c), c, c.ID, "")
	}
	return c, nil
}

// Alter records a change to the report of a date. The charge must be in
// that report. Alterations are kept in memory only, until Reset.
func (p *Provider) Alter(a Alteration) error {
	if _, err := settlement.ParseDate(a.Date); err != nil {
		return &FieldError{"date", msgReportDate}
	}
	switch {
	case a.Action != AlterDrop && a.Action != AlterDuplicate && a.Action != AlterChange:
		return &FieldError{"action", msgAlterationAction}
	case a.Action == AlterChange && a.Gross == "" && a.Currency == "":
		return &FieldError{"action", msgAlterationChange}
	}
	if a.ChargeID != "" && a.RefundID != "" {
		return &FieldError{"refund_id", msgAlterationTarget}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.RefundID != "" {
		i, ok := p.refundByID[a.RefundID]
		if !ok || !slices.ContainsFunc(refundLines(p.refunds[i]), func(l reportLine) bool { return onDate(l.at, a.Date) }) {
			return &FieldError{"refund_id", msgAlterationNoRefund}
		}
	} else if i, ok := p.byID[a.ChargeID]; !ok {
		return &FieldError{"charge_id", msgAlterationNoCharge}
	} else if l, ok := p.chargeLineLocked(p.charges[i]); !ok || !onDate(l.at, a.Date) {
		return &FieldError{"charge_id", msgAlterationNoCharge}
	}
	p.alterations[a.target()] = append(p.alterations[a.target()], a)
	return nil
}

// target is the id of the charge or the refund whose lines a changes.
func (a Alteration) target() string {
	if a.RefundID != "" {
		return a.RefundID
	}
	return a.ChargeID
}

// onDate reports whether t falls on the UTC date.
func onDate(t time.Time, date string) bool {
	return t.UTC().Format(settlement.DateLayout) == date
}

// reportLine is a line of a report before alterations: when its balance
// transaction was created, and the id of the charge or refund that
// alterations name it by.
type reportLine struct {
	at     time.Time
	id     string
	record settlement.Record
}

// Report returns the lines of the report of date, oldest first, with the
// alterations applied: one per succeeded charge created that day (UTC), one
// per hold captured that day, one per refund that succeeded that day, and
// one per refund that failed that day after it had succeeded. An
// authorization moves no money, so it has no line, nor has its void or
// expiry.
func (p *Provider) Report(date string) []settlement.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireHoldsLocked()
	var lines []reportLine
	for _, c := range p.charges {
		if l, ok := p.chargeLineLocked(c); ok && onDate(l.at, date) {
			lines = append(lines, l)
		}
	}
	for _, e := range p.refunds {
		for _, l := range refundLines(e) {
			if onDate(l.at, date) {
				lines = append(lines, l)
			}
		}
	}
	slices.SortStableFunc(lines, func(a, b reportLine) int { return a.at.Compare(b.at) })
	var records []settlement.Record
	for _, l := range lines {
		r := l.record
		copies := 1
		for _, a := range p.alterations[l.id] {
			if a.Date != date {
				continue
			}
			switch a.Action {
			case AlterDrop:
				copies = 0
			case AlterDuplicate:
				copies++
			case AlterChange:
				r = changed(r, a)
			}
		}
		for range copies {
			records = append(records, r)
		}
	}
	return records
}

// refundLines are the report lines of a refund, on any date: a refund line
// when it succeeded, with negative amounts, and a refund_failure line with
// positive amounts when it failed after that, since the money came back to
// the merchant then. The provider keeps no fee on a refund, and gives back
// none of the charge's.
func refundLines(e refundEntry) []reportLine {
	r := e.Refund
	line := func(at time.Time, txn, category string, minor int64) reportLine {
		amount := chargeonce.Money{Minor: minor, Currency: r.Currency}.Decimal()
		return reportLine{at: at, id: r.ID, record: settlement.Record{
			BalanceTransactionID: txn,
			CreatedUTC:           at.UTC().Format(time.RFC3339),
			ChargeID:             r.Charge,
			MerchantReference:    r.MerchantReference,
			ReportingCategory:    category,
			Gross:                amount,
			Fee:                  chargeonce.Money{Currency: r.Currency}.Decimal(),
			Net:                  amount,
			Currency:             r.Currency,
			RefundID:             r.ID,
		}}
	}
	var lines []reportLine
	if !e.SucceededAt.IsZero() {
		lines = append(lines, line(e.SucceededAt, "txn_"+r.ID, settlement.CategoryRefund, -r.Amount))
	}
	if !e.FailedAt.IsZero() {
		lines = append(lines, line(e.FailedAt, "txn_"+r.ID+"_failure", settlement.CategoryRefundFailure, r.Amount))
	}
	return lines
}

// chargeLineLocked is the report line of a charge, if it has one: a
// succeeded charge's, when it was created, or a captured hold's, when it
// was captured, of the amount captured, with the fee on that amount.
func (p *Provider) chargeLineLocked(c Charge) (reportLine, bool) {
	if c.Status != ChargeSucceeded {
		return reportLine{}, false
	}
	at, amount := c.Created, c.captured()
	if c.AmountCaptured != nil {
		at = p.holds[c.ID].CapturedAt
	}
	fee := p.fee.Fee(amount)
	money := func(minor int64) string { return chargeonce.Money{Minor: minor, Currency: c.Currency}.Decimal() }
	return reportLine{at: at, id: c.ID, record: settlement.Record{
		BalanceTransactionID: "txn_" + strings.TrimPrefix(c.ID, "ch_"),
		CreatedUTC:           at.UTC().Format(time.RFC3339),
		ChargeID:             c.ID,
		MerchantReference:    c.MerchantReference,
		ReportingCategory:    settlement.CategoryCharge,
		Gross:                money(amount),
		Fee:                  money(fee),
		Net:                  money(amount - fee),
		Currency:             c.Currency,
	}}, true
}

// changed applies a change to a line. A new gross that reads as an amount
// keeps the fee and makes the net follow, as a real report's would; one
// that does not is written as given, malformed.
func changed(r settlement.Record, a Alteration) settlement.Record {
	if a.Currency != "" {
		r.Currency = a.Currency
	}
	if a.Gross == "" {
		return r
	}
	r.Gross = a.Gross
	gross, errGross := chargeonce.ParseAmount(a.Gross, r.Currency)
	fee, errFee := chargeonce.ParseAmount(r.Fee, r.Currency)
	if errGross == nil && errFee == nil {
		// ParseAmount never returns math.MinInt64, so -fee is exact.
		if net, err := chargeonce.AddMinor(gross, -fee); err == nil {
			r.Net = chargeonce.Money{Minor: net, Currency: r.Currency}.Decimal()
		}
	}
	return r
}

// getSettlement serves GET /v1/settlements/{date}: CSV, or JSON when the
// client accepts application/json and not text/csv.
func (p *Provider) getSettlement(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	date := r.PathValue("date")
	if _, err := settlement.ParseDate(date); err != nil {
		rec.fail(w, outcomeReportRefused, invalidField("date", msgReportDate))
		return
	}
	records := p.Report(date)
	rec.Outcome = outcomeReportServed
	if wantsJSON(r.Header.Values("Accept")) {
		writeJSON(w, http.StatusOK, struct {
			Date string              `json:"date"`
			Data []settlement.Record `json:"data"`
		}{date, nonNil(records)})
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw, err := settlement.NewWriter(w)
	for i := 0; err == nil && i < len(records); i++ {
		err = cw.Write(records[i])
	}
	if err == nil {
		err = cw.Flush()
	}
	if err != nil {
		p.log.WarnContext(r.Context(), "settlement report not sent to its end", "date", date, "err", err)
	}
}

// wantsJSON reports whether the Accept header asks for JSON rather than CSV.
func wantsJSON(accept []string) bool {
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			media, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			switch media {
			case "text/csv":
				return false
			case contentTypeJSON:
				return true
			}
		}
	}
	return false
}

// plantCharge serves POST /_admin/charges.
func (p *Provider) plantCharge(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var pc PlantedCharge
	if prob := decodeJSON(w, r, &pc); prob != nil {
		rec.fail(w, outcomeReportRefused, prob)
		return
	}
	c, err := p.PlantCharge(pc)
	if err != nil {
		p.settlementRefused(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeChargePlanted
	rec.ChargeID = c.ID
	writeJSON(w, http.StatusCreated, c)
}

// alterSettlement serves POST /_admin/settlements.
func (p *Provider) alterSettlement(w http.ResponseWriter, r *http.Request, rec *RequestRecord) {
	var a Alteration
	if prob := decodeJSON(w, r, &a); prob != nil {
		rec.fail(w, outcomeReportRefused, prob)
		return
	}
	if err := p.Alter(a); err != nil {
		p.settlementRefused(w, r, rec, err)
		return
	}
	rec.Outcome = outcomeReportAltered
	rec.ChargeID, rec.RefundID = a.ChargeID, a.RefundID
	writeJSON(w, http.StatusOK, a)
}

// settlementRefused answers an invalid admin request with a 400 naming the
// field, or a 503 when the data file refused the change.
func (p *Provider) settlementRefused(w http.ResponseWriter, r *http.Request, rec *RequestRecord, err error) {
	var invalid *FieldError
	if !errors.As(err, &invalid) {
		p.dataFileFailed(w, r, rec, err)
		return
	}
	rec.fail(w, outcomeReportRefused, invalidField(invalid.Field, invalid.Detail))
}
