package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"chargeonce"
)

// MaxSettlementBatch bounds the lines, attempts, charge ids or exceptions
// that one settlement call reads or writes, so that matching a report of any
// length holds at most a few batches in memory.
const MaxSettlementBatch = 1000

// SettlementLine is one line of a provider's settlement report, staged for
// matching. A malformed line has Problem and Raw; its other fields are
// whatever could be read, and are not used.
type SettlementLine struct {
	// Provider names the provider whose report holds the line.
	Provider string
	// Date is the report date, as in 2006-01-02.
	Date string
	// LineNo is the line's number in the report, the header being line 1.
	LineNo               int
	BalanceTransactionID string
	// Created is when the balance transaction was created; zero when
	// unknown.
	Created           time.Time
	ChargeID          string
	MerchantReference string
	// Category is the reporting category, such as "charge" or "refund".
	Category string
	// RefundID is the provider's id of the refund a refund line returns
	// money for; empty on a charge line, whose charge is ChargeID.
	RefundID string
	// Gross, Fee and Net are in minor units of Currency; a refund's are
	// negative.
	Gross, Fee, Net int64
	Currency        string
	// Problem says why the line could not be read; empty for a good line.
	Problem string
	// Raw is the text of a malformed line.
	Raw string
}

// LineCursor is where a page of SettlementLines starts: after this charge id
// and line number, or, for RefundLines, after this refund id and line
// number. The zero value starts at the beginning.
type LineCursor struct {
	ChargeID string
	RefundID string
	LineNo   int
}

// SettlementException is one thing a settlement run found wrong, for a
// human to act on.
type SettlementException struct {
	// Seq numbers the exceptions of a run from 1, in the order found.
	Seq               int
	Kind              chargeonce.ExceptionKind
	ChargeID          string
	MerchantReference string
	// OrderID is the merchant's order, 0 when no order is known.
	OrderID int64
	// AttemptKey is the attempt's idempotency key, empty when unknown.
	AttemptKey string
	// LineNo is the report line, 0 when the report has none.
	LineNo int
	// Reported is what the report says; Expected is what the attempt
	// holds. Either is zero when there is nothing to say.
	ReportedMinor    int64
	ReportedCurrency string
	ExpectedMinor    int64
	ExpectedCurrency string
	// RefundID is the provider's refund id and RefundKey our refund's key,
	// when the exception is about a refund, or about the refund that
	// repaired a late charge; empty otherwise.
	RefundID  string
	RefundKey string
	// Detail is a sentence a person can act on.
	Detail string
}

// SettlementStatus says whether a run's result can still change.
type SettlementStatus string

// The settlement statuses.
const (
	// SettlementProvisional: some succeeded attempts are not in the report
	// yet, but their grace period is not over; a later run decides them.
	SettlementProvisional SettlementStatus = "provisional"
	// SettlementFinal: every attempt is either matched or an exception.
	SettlementFinal SettlementStatus = "final"
)

// SettlementTotal sums the lines of one currency.
type SettlementTotal struct {
	Currency string `json:"currency"`
	Lines    int    `json:"lines"`
	// Gross, Fee and Net are in minor units.
	Gross int64 `json:"gross"`
	Fee   int64 `json:"fee"`
	Net   int64 `json:"net"`
}

// SettlementRun is the result of matching one report date.
type SettlementRun struct {
	// Provider names the provider whose report was matched: each
	// provider's books are settled on their own.
	Provider string
	Date     string
	// RunID names the run whose exceptions are the date's.
	RunID  string
	Status SettlementStatus
	// Lines counts the report's lines, malformed ones included.
	Lines int
	// Matched counts the report's charges that match a succeeded attempt
	// or an adopted late charge, and its refunds that match a succeeded
	// refund.
	Matched int
	// Awaiting counts the succeeded attempts and refunds of the date not
	// in the report yet, within the grace period.
	Awaiting int
	// Exceptions counts the exceptions, repairs included; ByKind splits
	// them by kind (read only: it is counted from the stored exceptions).
	Exceptions int
	ByKind     map[chargeonce.ExceptionKind]int
	// Totals are by currency, in currency order.
	Totals     []SettlementTotal
	GraceDays  int
	FinishedAt time.Time
}

// SettlementStore keeps the staged report lines and the settlement runs.
// Each provider's books are its own: a report, its lines, its runs and
// their exceptions belong to one provider and one report date, and the
// reads of attempts and refunds take the provider whose report they match.
type SettlementStore interface {
	// ClearSettlementLines deletes the staged lines of the provider's
	// report date.
	ClearSettlementLines(ctx context.Context, provider, date string) error
	// AddSettlementLines stages at most MaxSettlementBatch lines; a line
	// already staged with the same provider, date and number is replaced.
	AddSettlementLines(ctx context.Context, lines []SettlementLine) error
	// SettlementLines returns at most limit staged lines of the provider's
	// date after
	// the cursor, by charge id (byte by byte, as Go compares strings) and
	// then line number; malformed lines, whose charge id is empty, come
	// first.
	SettlementLines(ctx context.Context, provider, date string, after LineCursor, limit int) ([]SettlementLine, error)
	// SucceededAttempts returns at most limit succeeded attempts at the
	// provider whose charge its report of [from, to) must show, whose charge id sorts
	// after afterChargeID, by charge id (byte by byte), without their
	// Requests: an attempt without a hold created in [from, to), and an
	// attempt whose hold a capture ended in [from, to). An attempt whose
	// hold is not captured is in no day's.
	SucceededAttempts(ctx context.Context, provider string, from, to time.Time, afterChargeID string, limit int) ([]ReportedAttempt, error)
	// AttemptsByCharge returns the attempts at the provider, of any
	// status, that hold one of at most MaxSettlementBatch of its charge
	// ids, without Requests.
	AttemptsByCharge(ctx context.Context, provider string, chargeIDs []string) ([]ReportedAttempt, error)
	// AttemptsByReference returns the attempts at the provider with one of
	// at most MaxSettlementBatch merchant references, without Requests.
	AttemptsByReference(ctx context.Context, provider string, references []string) ([]ReportedAttempt, error)
	// ReportedCharges returns which of at most MaxSettlementBatch charge ids
	// are in the staged lines of the provider's report dates from to to,
	// inclusive.
	ReportedCharges(ctx context.Context, provider, from, to string, chargeIDs []string) ([]string, error)
	// RefundLines returns at most limit staged lines of the provider's
	// date that name
	// a refund, after the cursor's RefundID and LineNo, by refund id (byte
	// by byte) and then line number.
	RefundLines(ctx context.Context, provider, date string, after LineCursor, limit int) ([]SettlementLine, error)
	// SucceededRefunds returns at most limit succeeded refunds at the
	// provider created in [from, to) whose provider refund id sorts after
	// afterRefundID, by that id (byte by byte), without their Requests.
	SucceededRefunds(ctx context.Context, provider string, from, to time.Time, afterRefundID string, limit int) ([]Refund, error)
	// RefundsByProviderID returns the refunds at the provider, of any
	// status, that hold one of at most MaxSettlementBatch of its refund
	// ids, without Requests.
	RefundsByProviderID(ctx context.Context, provider string, refundIDs []string) ([]Refund, error)
	// RefundsByReference returns the refunds at the provider with one of
	// at most MaxSettlementBatch merchant references, without Requests.
	RefundsByReference(ctx context.Context, provider string, references []string) ([]Refund, error)
	// ReportedRefunds returns which of at most MaxSettlementBatch refund
	// ids are in the staged lines of the provider's report dates from to
	// to, inclusive.
	ReportedRefunds(ctx context.Context, provider, from, to string, refundIDs []string) ([]string, error)
	// LateCharges returns what RecordLateCharge decided for at most
	// MaxSettlementBatch charge ids; a charge it never saw is left out.
	LateCharges(ctx context.Context, chargeIDs []string) ([]RecordedLateCharge, error)
	// AddSettlementExceptions stores at most MaxSettlementBatch exceptions
	// of a run that FinishSettlementRun has not finished yet; one already
	// stored with the same run and Seq is replaced.
	AddSettlementExceptions(ctx context.Context, provider, date, runID string, exceptions []SettlementException) error
	// FinishSettlementRun makes run the result of its provider's date, in
	// one transaction that also deletes the exceptions of every other run
	// of it, so that a rerun replaces the result and duplicates nothing.
	FinishSettlementRun(ctx context.Context, run SettlementRun) error
	// SettlementRun returns the result of the provider's date, or
	// ErrNotFound.
	SettlementRun(ctx context.Context, provider, date string) (SettlementRun, error)
	// SettlementExceptions returns the first limit exceptions of the
	// result of the provider's date, by Seq.
	SettlementExceptions(ctx context.Context, provider, date string, limit int) ([]SettlementException, error)
}

// ReportedAttempt is an attempt as the settlement reads it: with its hold's
// status, and the charge that a settlement report must show for it.
type ReportedAttempt struct {
	Attempt
	// Hold is the status of the attempt's hold; empty when it has none
	// (the attempt captured its charge at once).
	Hold chargeonce.HoldStatus
	// Expected is the gross of the charge line the report must show for
	// the attempt's charge, once: the attempt's Amount when it has no
	// hold, on the day it was created; the captured amount when its hold
	// is captured, on the day of the capture; nothing (0) when its hold is
	// not captured, since an authorization, a void or an expiry takes no
	// money.
	Expected chargeonce.Money
}

// Uncaptured reports whether the attempt's charge is a hold that took no
// money: authorized still, voided or expired.
func (a ReportedAttempt) Uncaptured() bool {
	return a.Hold != "" && a.Hold != chargeonce.HoldCaptured
}

// RecordedLateCharge is what RecordLateCharge decided for one charge.
type RecordedLateCharge struct {
	ChargeID   string
	AttemptKey string
	OrderID    int64
	Amount     chargeonce.Money
	// Decision is chargeonce.LateChargeAdopted or LateChargeRefunded.
	Decision chargeonce.LateChargeDecision
	// RefundKey is the repair's refund, when the decision is refunded.
	RefundKey string
	FoundAt   time.Time
}

// validBooks reports whether provider names a provider and date is a
// calendar date spelled 2006-01-02: the two that name a provider's books of
// one day.
func validBooks(provider, date string) error {
	if provider == "" {
		return errors.New("the provider is missing")
	}
	return validDate(date)
}

// validDate reports whether date is a calendar date spelled 2006-01-02.
func validDate(date string) error {
	if t, err := time.Parse(time.DateOnly, date); err != nil || t.Format(time.DateOnly) != date {
		return fmt.Errorf("report date %q is not a date such as 2026-03-14", date)
	}
	return nil
}

func checkBatch(what string, n int) error {
	if n > MaxSettlementBatch {
		return fmt.Errorf("%d %s are more than one batch of %d", n, what, MaxSettlementBatch)
	}
	return nil
}

// inList returns "$first, $first+1, …" for n values.
func inList(first, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(first+i))
	}
	return b.String()
}

// anys turns strings into query arguments.
func anys(values []string) []any {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return args
}

func (s *db) ClearSettlementLines(ctx context.Context, provider, date string) error {
	if err := validBooks(provider, date); err != nil {
		return fmt.Errorf("store: clear settlement lines: %w", err)
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		_, err := q.exec(ctx, `DELETE FROM settlement_lines WHERE provider = $1 AND report_date = $2`, provider, date)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: clear settlement lines of %s at %s: %w", date, provider, err)
	}
	return nil
}

const lineColumns = `provider, report_date, line_no, balance_transaction_id, created_at, charge_id, merchant_reference,
	reporting_category, gross_minor, fee_minor, net_minor, currency, problem, raw, refund_id`

func (s *db) AddSettlementLines(ctx context.Context, lines []SettlementLine) error {
	if err := checkBatch("lines", len(lines)); err != nil {
		return fmt.Errorf("store: add settlement lines: %w", err)
	}
	for _, l := range lines {
		if err := validBooks(l.Provider, l.Date); err != nil {
			return fmt.Errorf("store: add settlement lines: %w", err)
		}
		if l.LineNo < 2 {
			return fmt.Errorf("store: add settlement lines: line number %d is not after the header", l.LineNo)
		}
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		for _, l := range lines {
			var created any
			if !l.Created.IsZero() {
				created = s.t(l.Created)
			}
			_, err := q.exec(ctx, `INSERT INTO settlement_lines (`+lineColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
				ON CONFLICT (provider, report_date, line_no) DO UPDATE SET
				balance_transaction_id = excluded.balance_transaction_id, created_at = excluded.created_at,
				charge_id = excluded.charge_id, merchant_reference = excluded.merchant_reference,
				reporting_category = excluded.reporting_category, gross_minor = excluded.gross_minor,
				fee_minor = excluded.fee_minor, net_minor = excluded.net_minor, currency = excluded.currency,
				problem = excluded.problem, raw = excluded.raw, refund_id = excluded.refund_id`,
				l.Provider, l.Date, l.LineNo, l.BalanceTransactionID, created, l.ChargeID, l.MerchantReference,
				l.Category, l.Gross, l.Fee, l.Net, l.Currency, l.Problem, l.Raw, l.RefundID)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: add settlement lines: %w", err)
	}
	return nil
}

func scanLine(r rows) (SettlementLine, error) {
	var (
		l       SettlementLine
		created timestamp
	)
	err := r.Scan(&l.Provider, &l.Date, &l.LineNo, &l.BalanceTransactionID, &created, &l.ChargeID, &l.MerchantReference,
		&l.Category, &l.Gross, &l.Fee, &l.Net, &l.Currency, &l.Problem, &l.Raw, &l.RefundID)
	l.Created = created.t
	return l, err
}

func (s *db) SettlementLines(ctx context.Context, provider, date string, after LineCursor, limit int) ([]SettlementLine, error) {
	if err := validBooks(provider, date); err != nil {
		return nil, fmt.Errorf("store: settlement lines: %w", err)
	}
	if limit <= 0 || limit > MaxSettlementBatch {
		return nil, fmt.Errorf("store: settlement lines: limit %d is not between 1 and %d", limit, MaxSettlementBatch)
	}
	var lines []SettlementLine
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		charge := `charge_id` + s.d.byteOrder
		lines, err = queryAll(ctx, q, scanLine, `SELECT `+lineColumns+` FROM settlement_lines
			WHERE provider = $5 AND report_date = $1 AND (`+charge+` > $2 OR (charge_id = $2 AND line_no > $3))
			ORDER BY `+charge+`, line_no LIMIT $4`, date, after.ChargeID, after.LineNo, limit, provider)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: settlement lines of %s at %s: %w", date, provider, err)
	}
	return lines, nil
}

// reportedAttempts reads ReportedAttempts: the attempt's columns, its
// hold's status (empty without a hold) and the expected gross, FROM the
// attempts joined with their holds, whose columns are renamed so that the
// attempt's need no table name.
const reportedAttempts = `SELECT ` + attemptColumns + `, COALESCE(hold_status, ''),
	CASE WHEN hold_status IS NULL THEN amount_minor WHEN hold_status = 'captured' THEN captured_minor ELSE 0 END
	FROM payment_attempts LEFT JOIN (SELECT attempt_key, status AS hold_status, captured_minor, ended_at FROM holds) h
	ON h.attempt_key = payment_attempts.idempotency_key`

func scanReportedAttempt(r rows) (ReportedAttempt, error) {
	var (
		a        ReportedAttempt
		hold     string
		expected int64
	)
	attempt, err := scanAttemptAnd(r, &hold, &expected)
	if err != nil {
		return ReportedAttempt{}, err
	}
	a.Attempt, a.Expected = attempt, chargeonce.Money{Minor: expected, Currency: attempt.Amount.Currency}
	if a.Hold = chargeonce.HoldStatus(hold); hold != "" && !a.Hold.Valid() {
		return ReportedAttempt{}, errCorrupt("hold", a.Key, fmt.Errorf("unknown status %q", hold))
	}
	return a, nil
}

func (s *db) SucceededAttempts(ctx context.Context, provider string, from, to time.Time, afterChargeID string, limit int) ([]ReportedAttempt, error) {
	if limit <= 0 || limit > MaxSettlementBatch {
		return nil, fmt.Errorf("store: succeeded attempts: limit %d is not between 1 and %d", limit, MaxSettlementBatch)
	}
	var attempts []ReportedAttempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		charge := `provider_payment_id` + s.d.byteOrder
		attempts, err = queryAll(ctx, q, scanReportedAttempt, reportedAttempts+`
			WHERE status = 'succeeded' AND provider = $5 AND `+charge+` > $1
			AND ((hold_status IS NULL AND created_at >= $2 AND created_at < $3)
				OR (hold_status = 'captured' AND ended_at >= $2 AND ended_at < $3))
			ORDER BY `+charge+` LIMIT $4`, afterChargeID, s.t(from), s.t(to), limit, provider)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: succeeded attempts: %w", err)
	}
	return attempts, nil
}

func (s *db) AttemptsByCharge(ctx context.Context, provider string, chargeIDs []string) ([]ReportedAttempt, error) {
	return s.attemptsIn(ctx, provider, "provider_payment_id", chargeIDs)
}

func (s *db) AttemptsByReference(ctx context.Context, provider string, references []string) ([]ReportedAttempt, error) {
	return s.attemptsIn(ctx, provider, "merchant_reference", references)
}

// attemptsIn reads the attempts at the provider whose column holds one of
// values.
func (s *db) attemptsIn(ctx context.Context, provider, column string, values []string) ([]ReportedAttempt, error) {
	if err := checkBatch("values", len(values)); err != nil {
		return nil, fmt.Errorf("store: attempts by %s: %w", column, err)
	}
	if len(values) == 0 {
		return nil, nil
	}
	var attempts []ReportedAttempt
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		attempts, err = queryAll(ctx, q, scanReportedAttempt, reportedAttempts+`
			WHERE provider = $1 AND `+column+` IN (`+inList(2, len(values))+`) ORDER BY created_at, idempotency_key`,
			append([]any{provider}, anys(values)...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: attempts by %s: %w", column, err)
	}
	return attempts, nil
}

func (s *db) ReportedCharges(ctx context.Context, provider, from, to string, chargeIDs []string) ([]string, error) {
	return s.reported(ctx, provider, "charge_id", from, to, chargeIDs)
}

func (s *db) ReportedRefunds(ctx context.Context, provider, from, to string, refundIDs []string) ([]string, error) {
	return s.reported(ctx, provider, "refund_id", from, to, refundIDs)
}

// reported returns which of ids the column of a good staged line of the
// provider's report dates from to to holds.
func (s *db) reported(ctx context.Context, provider, column, from, to string, ids []string) ([]string, error) {
	if err := errors.Join(validBooks(provider, from), validDate(to), checkBatch("ids", len(ids))); err != nil {
		return nil, fmt.Errorf("store: reported %s: %w", column, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var found []string
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		found, err = queryAll(ctx, q, func(r rows) (string, error) {
			var id string
			return id, r.Scan(&id)
		}, `SELECT DISTINCT `+column+` FROM settlement_lines
			WHERE provider = $1 AND report_date >= $2 AND report_date <= $3 AND problem = ''
			AND `+column+` IN (`+inList(4, len(ids))+`)
			ORDER BY `+column, append([]any{provider, from, to}, anys(ids)...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: reported %s: %w", column, err)
	}
	return found, nil
}

func (s *db) RefundLines(ctx context.Context, provider, date string, after LineCursor, limit int) ([]SettlementLine, error) {
	if err := validBooks(provider, date); err != nil {
		return nil, fmt.Errorf("store: refund lines: %w", err)
	}
	if limit <= 0 || limit > MaxSettlementBatch {
		return nil, fmt.Errorf("store: refund lines: limit %d is not between 1 and %d", limit, MaxSettlementBatch)
	}
	var lines []SettlementLine
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		refund := `refund_id` + s.d.byteOrder
		lines, err = queryAll(ctx, q, scanLine, `SELECT `+lineColumns+` FROM settlement_lines
			WHERE provider = $5 AND report_date = $1 AND refund_id <> '' AND (`+refund+` > $2 OR (refund_id = $2 AND line_no > $3))
			ORDER BY `+refund+`, line_no LIMIT $4`, date, after.RefundID, after.LineNo, limit, provider)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: refund lines of %s at %s: %w", date, provider, err)
	}
	return lines, nil
}

func (s *db) SucceededRefunds(ctx context.Context, provider string, from, to time.Time, afterRefundID string, limit int) ([]Refund, error) {
	if limit <= 0 || limit > MaxSettlementBatch {
		return nil, fmt.Errorf("store: succeeded refunds: limit %d is not between 1 and %d", limit, MaxSettlementBatch)
	}
	var refunds []Refund
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		id := `provider_refund_id` + s.d.byteOrder
		refunds, err = queryAll(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds
			WHERE status = 'succeeded' AND provider = $5 AND `+id+` > $1 AND created_at >= $2 AND created_at < $3
			ORDER BY `+id+` LIMIT $4`, afterRefundID, s.t(from), s.t(to), limit, provider)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: succeeded refunds: %w", err)
	}
	return refunds, nil
}

func (s *db) RefundsByProviderID(ctx context.Context, provider string, refundIDs []string) ([]Refund, error) {
	return s.refundsIn(ctx, provider, "provider_refund_id", refundIDs)
}

func (s *db) RefundsByReference(ctx context.Context, provider string, references []string) ([]Refund, error) {
	return s.refundsIn(ctx, provider, "merchant_reference", references)
}

// refundsIn reads the refunds at the provider whose column holds one of
// values.
func (s *db) refundsIn(ctx context.Context, provider, column string, values []string) ([]Refund, error) {
	if err := checkBatch("values", len(values)); err != nil {
		return nil, fmt.Errorf("store: refunds by %s: %w", column, err)
	}
	if len(values) == 0 {
		return nil, nil
	}
	var refunds []Refund
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		refunds, err = queryAll(ctx, q, scanRefund, `SELECT `+refundColumns+` FROM refunds
			WHERE provider = $1 AND `+column+` IN (`+inList(2, len(values))+`) ORDER BY created_at, idempotency_key`,
			append([]any{provider}, anys(values)...)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: refunds by %s: %w", column, err)
	}
	return refunds, nil
}

func (s *db) LateCharges(ctx context.Context, chargeIDs []string) ([]RecordedLateCharge, error) {
	if err := checkBatch("charge ids", len(chargeIDs)); err != nil {
		return nil, fmt.Errorf("store: late charges: %w", err)
	}
	if len(chargeIDs) == 0 {
		return nil, nil
	}
	var found []RecordedLateCharge
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		found, err = queryAll(ctx, q, scanLateCharge, `SELECT charge_id, attempt_key, order_id, amount_minor, currency,
			decision, COALESCE(refund_key, ''), found_at FROM late_charges
			WHERE charge_id IN (`+inList(1, len(chargeIDs))+`) ORDER BY charge_id`, anys(chargeIDs)...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: late charges: %w", err)
	}
	return found, nil
}

func scanLateCharge(r rows) (RecordedLateCharge, error) {
	var (
		c                  RecordedLateCharge
		minor              int64
		currency, decision string
		found              timestamp
	)
	if err := r.Scan(&c.ChargeID, &c.AttemptKey, &c.OrderID, &minor, &currency, &decision, &c.RefundKey, &found); err != nil {
		return RecordedLateCharge{}, err
	}
	var err error
	if c.Amount, err = chargeonce.NewMoney(minor, currency); err != nil {
		return RecordedLateCharge{}, errCorrupt("late charge", c.ChargeID, err)
	}
	c.Decision = chargeonce.LateChargeDecision(decision)
	if c.FoundAt, err = found.required("found_at"); err != nil {
		return RecordedLateCharge{}, errCorrupt("late charge", c.ChargeID, err)
	}
	return c, nil
}

const exceptionColumns = `seq, kind, charge_id, merchant_reference, order_id, attempt_key, line_no,
	reported_minor, reported_currency, expected_minor, expected_currency, detail, refund_id, refund_key`

func (s *db) AddSettlementExceptions(ctx context.Context, provider, date, runID string, exceptions []SettlementException) error {
	if err := errors.Join(validBooks(provider, date), checkBatch("exceptions", len(exceptions))); err != nil {
		return fmt.Errorf("store: add settlement exceptions: %w", err)
	}
	for _, e := range exceptions {
		switch {
		case !e.Kind.Valid():
			return fmt.Errorf("store: add settlement exceptions: unknown kind %q", e.Kind)
		case e.Seq <= 0:
			return fmt.Errorf("store: add settlement exceptions: sequence number %d is not positive", e.Seq)
		case e.Detail == "":
			return fmt.Errorf("store: add settlement exceptions: exception %d says nothing", e.Seq)
		}
	}
	err := s.txs.inTx(ctx, true, func(q querier) error {
		for _, e := range exceptions {
			_, err := q.exec(ctx, `INSERT INTO settlement_exceptions (provider, report_date, run_id, `+exceptionColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
				ON CONFLICT (provider, report_date, run_id, seq) DO UPDATE SET
				kind = excluded.kind, charge_id = excluded.charge_id, merchant_reference = excluded.merchant_reference,
				order_id = excluded.order_id, attempt_key = excluded.attempt_key, line_no = excluded.line_no,
				reported_minor = excluded.reported_minor, reported_currency = excluded.reported_currency,
				expected_minor = excluded.expected_minor, expected_currency = excluded.expected_currency,
				detail = excluded.detail, refund_id = excluded.refund_id, refund_key = excluded.refund_key`,
				provider, date, runID, e.Seq, string(e.Kind), e.ChargeID, e.MerchantReference, e.OrderID, e.AttemptKey, e.LineNo,
				e.ReportedMinor, e.ReportedCurrency, e.ExpectedMinor, e.ExpectedCurrency, e.Detail, e.RefundID, e.RefundKey)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: add settlement exceptions of %s at %s: %w", date, provider, err)
	}
	return nil
}

func (s *db) FinishSettlementRun(ctx context.Context, run SettlementRun) error {
	switch err := validBooks(run.Provider, run.Date); {
	case err != nil:
		return fmt.Errorf("store: finish settlement run: %w", err)
	case run.RunID == "":
		return errors.New("store: finish settlement run: the run ID is missing")
	case run.Status != SettlementProvisional && run.Status != SettlementFinal:
		return fmt.Errorf("store: finish settlement run: unknown status %q", run.Status)
	case run.Lines < 0 || run.Matched < 0 || run.Awaiting < 0 || run.Exceptions < 0 || run.GraceDays < 0:
		return errors.New("store: finish settlement run: a count is negative")
	case run.FinishedAt.IsZero():
		return errors.New("store: finish settlement run: the time is missing")
	}
	totals, err := json.Marshal(nonNilTotals(run.Totals))
	if err != nil {
		return fmt.Errorf("store: finish settlement run: %w", err)
	}
	err = s.txs.inTx(ctx, true, func(q querier) error {
		stored, err := queryOne(ctx, q, scanInt64,
			`SELECT count(*) FROM settlement_exceptions WHERE provider = $1 AND report_date = $2 AND run_id = $3`,
			run.Provider, run.Date, run.RunID)
		if err != nil {
			return err
		}
		if stored != int64(run.Exceptions) {
			return fmt.Errorf("the run counts %s but %d are stored", chargeonce.Plural(run.Exceptions, "exception"), stored)
		}
		if _, err := q.exec(ctx, `DELETE FROM settlement_exceptions WHERE provider = $1 AND report_date = $2 AND run_id <> $3`,
			run.Provider, run.Date, run.RunID); err != nil {
			return err
		}
		_, err = q.exec(ctx, `INSERT INTO settlement_runs (`+runColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (provider, report_date) DO UPDATE SET
			run_id = excluded.run_id, status = excluded.status, lines = excluded.lines, matched = excluded.matched,
			awaiting = excluded.awaiting, exceptions = excluded.exceptions, totals = excluded.totals,
			grace_days = excluded.grace_days, finished_at = excluded.finished_at`,
			run.Provider, run.Date, run.RunID, string(run.Status), run.Lines, run.Matched, run.Awaiting, run.Exceptions,
			string(totals), run.GraceDays, s.t(run.FinishedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: finish settlement run of %s at %s: %w", run.Date, run.Provider, err)
	}
	return nil
}

func nonNilTotals(t []SettlementTotal) []SettlementTotal {
	if t == nil {
		return []SettlementTotal{}
	}
	return t
}

func (s *db) SettlementRun(ctx context.Context, provider, date string) (SettlementRun, error) {
	if err := validBooks(provider, date); err != nil {
		return SettlementRun{}, fmt.Errorf("store: settlement run: %w", err)
	}
	var run SettlementRun
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		run, err = queryOne(ctx, q, scanRun, `SELECT `+runColumns+` FROM settlement_runs
			WHERE provider = $1 AND report_date = $2`, provider, date)
		if err != nil {
			return err
		}
		runs := []SettlementRun{run}
		err = countByKind(ctx, q, runs)
		run = runs[0]
		return err
	})
	if err != nil {
		return SettlementRun{}, fmt.Errorf("store: settlement run of %s at %s: %w", date, provider, err)
	}
	return run, nil
}

const runColumns = `provider, report_date, run_id, status, lines, matched, awaiting, exceptions, totals, grace_days, finished_at`

// countByKind sets the ByKind of runs, read in q's transaction, from the
// stored exceptions of each run's RunID.
func countByKind(ctx context.Context, q querier, runs []SettlementRun) error {
	if len(runs) == 0 {
		return nil
	}
	var (
		match strings.Builder
		args  []any
	)
	for i, run := range runs {
		if i > 0 {
			match.WriteString(" OR ")
		}
		fmt.Fprintf(&match, "(provider = $%d AND report_date = $%d AND run_id = $%d)", 3*i+1, 3*i+2, 3*i+3)
		args = append(args, run.Provider, run.Date, run.RunID)
	}
	type books struct{ provider, date string }
	type count struct {
		books
		kind string
		n    int
	}
	counts, err := queryAll(ctx, q, func(r rows) (count, error) {
		var c count
		return c, r.Scan(&c.provider, &c.date, &c.kind, &c.n)
	}, `SELECT provider, report_date, kind, count(*) FROM settlement_exceptions WHERE `+match.String()+`
		GROUP BY provider, report_date, kind`, args...)
	if err != nil {
		return err
	}
	byBooks := make(map[books]map[chargeonce.ExceptionKind]int, len(runs))
	for i := range runs {
		runs[i].ByKind = make(map[chargeonce.ExceptionKind]int)
		byBooks[books{runs[i].Provider, runs[i].Date}] = runs[i].ByKind
	}
	for _, c := range counts {
		byBooks[c.books][chargeonce.ExceptionKind(c.kind)] = c.n
	}
	return nil
}

func scanRun(r rows) (SettlementRun, error) {
	var (
		run      SettlementRun
		status   string
		totals   string
		finished timestamp
	)
	if err := r.Scan(&run.Provider, &run.Date, &run.RunID, &status, &run.Lines, &run.Matched, &run.Awaiting, &run.Exceptions,
		&totals, &run.GraceDays, &finished); err != nil {
		return SettlementRun{}, err
	}
	run.Status = SettlementStatus(status)
	run.FinishedAt = finished.t
	if err := json.Unmarshal([]byte(totals), &run.Totals); err != nil {
		return SettlementRun{}, errCorrupt("settlement run", run.Date, err)
	}
	return run, nil
}

func (s *db) SettlementExceptions(ctx context.Context, provider, date string, limit int) ([]SettlementException, error) {
	if err := validBooks(provider, date); err != nil {
		return nil, fmt.Errorf("store: settlement exceptions: %w", err)
	}
	if limit <= 0 || limit > MaxSettlementBatch {
		return nil, fmt.Errorf("store: settlement exceptions: limit %d is not between 1 and %d", limit, MaxSettlementBatch)
	}
	var exceptions []SettlementException
	err := s.txs.inTx(ctx, false, func(q querier) error {
		var err error
		exceptions, err = queryAll(ctx, q, scanException, `SELECT `+exceptionColumns+` FROM settlement_exceptions e
			JOIN settlement_runs r ON r.provider = e.provider AND r.report_date = e.report_date AND r.run_id = e.run_id
			WHERE e.provider = $1 AND e.report_date = $2 ORDER BY e.seq LIMIT $3`, provider, date, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: settlement exceptions of %s at %s: %w", date, provider, err)
	}
	return exceptions, nil
}

func scanException(r rows) (SettlementException, error) {
	var (
		e    SettlementException
		kind string
	)
	err := r.Scan(&e.Seq, &kind, &e.ChargeID, &e.MerchantReference, &e.OrderID, &e.AttemptKey, &e.LineNo,
		&e.ReportedMinor, &e.ReportedCurrency, &e.ExpectedMinor, &e.ExpectedCurrency, &e.Detail, &e.RefundID, &e.RefundKey)
	e.Kind = chargeonce.ExceptionKind(kind)
	return e, err
}
