// Package settlement is the provider's daily settlement report: its CSV
// format, written by the fake provider and read by the settlement activity,
// and its download, streamed line by line so that a report of any length is
// read in bounded memory.
//
// The format is that of docs/provider-http.md, after Stripe's itemized
// payout reconciliation report: one header row, then one line per balance
// transaction of the report date, with amounts as decimal strings in the
// currency's units. Reports written before refunds had their own column,
// without refund_id, are read too.
package settlement

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"chargeonce"
)

// Columns are the report's columns, in order; the header row names them.
var Columns = []string{
	"balance_transaction_id", "created_utc", "charge_id", "merchant_reference",
	"reporting_category", "gross", "fee", "net", "currency", "refund_id",
}

// legacyColumns is the header of a report written before refund_id was
// added, which the Reader still accepts.
var legacyColumns = Columns[:len(Columns)-1]

// Reporting categories that a line may have. Every category counts in the
// totals.
const (
	// CategoryCharge is a charge: positive amounts, no refund_id.
	CategoryCharge = "charge"
	// CategoryRefund is a refund that succeeded, on the date it succeeded:
	// negative amounts, the charge it returns money from, the refund's
	// merchant reference and its refund_id.
	CategoryRefund = "refund"
	// CategoryRefundFailure reverses a refund that failed after it had
	// succeeded, on the date it failed, as Stripe's refund_failure does:
	// the refund's line with positive amounts, since the money came back
	// to the merchant.
	CategoryRefundFailure = "refund_failure"
)

// isRefundCategory reports whether lines of category c are about a refund
// and name it.
func isRefundCategory(c string) bool {
	return c == CategoryRefund || c == CategoryRefundFailure
}

// DateLayout spells a report date, in UTC.
const DateLayout = time.DateOnly

// ParseDate reads a report date such as "2026-03-14", refusing anything
// that is not a calendar date spelled that way.
func ParseDate(s string) (time.Time, error) {
	d, err := time.Parse(DateLayout, s)
	if err != nil || d.Format(DateLayout) != s {
		return time.Time{}, fmt.Errorf("%q is not a date such as 2026-03-14 (year-month-day, UTC)", s)
	}
	return d, nil
}

// EarliestDate is the first date that a settlement is run or read for: no
// card was charged through this service before it, and a year such as 0000
// is a typing mistake.
var EarliestDate = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseSettlementDate reads the date of a settlement to run or read: a date
// as ParseDate reads it, no earlier than EarliestDate, and begun at now (a
// date yet to begin has no report). The API and the starter hold dates to it.
func ParseSettlementDate(s string, now time.Time) (time.Time, error) {
	d, err := ParseDate(s)
	switch {
	case err != nil:
		return time.Time{}, err
	case d.Before(EarliestDate):
		return time.Time{}, fmt.Errorf("%s is before %s: no settlement is that old", s, EarliestDate.Format(DateLayout))
	case d.After(now):
		return time.Time{}, fmt.Errorf("%s is in the future: the provider has no report for it yet", s)
	}
	return d, nil
}

// Record is one line of the report as text, exactly as the provider writes
// it. Its JSON form is the report's JSON variant.
type Record struct {
	BalanceTransactionID string `json:"balance_transaction_id"`
	// CreatedUTC is RFC 3339 in UTC, such as "2026-03-14T12:09:26Z".
	CreatedUTC        string `json:"created_utc"`
	ChargeID          string `json:"charge_id"`
	MerchantReference string `json:"merchant_reference"`
	ReportingCategory string `json:"reporting_category"`
	Gross             string `json:"gross"`
	Fee               string `json:"fee"`
	Net               string `json:"net"`
	Currency          string `json:"currency"`
	// RefundID is the refund of a refund or refund_failure line; empty on
	// a charge line.
	RefundID string `json:"refund_id"`
}

func (r Record) fields() []string {
	return []string{r.BalanceTransactionID, r.CreatedUTC, r.ChargeID, r.MerchantReference,
		r.ReportingCategory, r.Gross, r.Fee, r.Net, r.Currency, r.RefundID}
}

// Line is a line of the report, read and checked.
type Line struct {
	// No is the line's number in the report, the header being line 1.
	No                   int
	BalanceTransactionID string
	Created              time.Time
	ChargeID             string
	MerchantReference    string
	Category             string
	// Gross, Fee and Net are exact, in minor units of Currency; a refund's
	// are negative.
	Gross, Fee, Net int64
	Currency        string
	// RefundID is the refund of a refund or refund_failure line; empty on
	// other lines, and on every line of a report without the column.
	RefundID string
}

// MalformedError is a line that cannot be read. Reading goes on with the
// next line.
type MalformedError struct {
	// Line is the line's number in the report.
	Line int
	// Text is the line's fields, joined by commas, at most maxRawText bytes.
	Text   string
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("settlement report line %d: %s", e.Line, e.Reason)
}

// maxRawText bounds the text of a malformed line that is kept.
const maxRawText = 512

// Writer writes a report.
type Writer struct {
	csv *csv.Writer
}

// NewWriter writes the header row to w and returns a Writer for the lines.
func NewWriter(w io.Writer) (*Writer, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return nil, err
	}
	return &Writer{csv: cw}, nil
}

// Write writes one line.
func (w *Writer) Write(r Record) error {
	return w.csv.Write(r.fields())
}

// Flush writes what is buffered and reports the first error of any write.
func (w *Writer) Flush() error {
	w.csv.Flush()
	return w.csv.Error()
}

// Reader reads a report one line at a time; it holds one line in memory.
type Reader struct {
	csv *csv.Reader
	// refundIDs is whether the report has the refund_id column.
	refundIDs bool
}

// NewReader reads the header row from r. A report whose header is neither
// Columns nor Columns without refund_id is refused as a whole: its lines
// could not be read with any confidence.
func NewReader(r io.Reader) (*Reader, error) {
	cr := csv.NewReader(r)
	// Zero: the header row sets the number of fields of every line.
	cr.FieldsPerRecord = 0
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("settlement report is empty: not even a header row")
	}
	if err != nil || !slices.Equal(header, Columns) && !slices.Equal(header, legacyColumns) {
		return nil, fmt.Errorf("settlement report header must be %s, or the same without refund_id", strings.Join(Columns, ","))
	}
	return &Reader{csv: cr, refundIDs: len(header) == len(Columns)}, nil
}

// Next returns the next line; io.EOF after the last. A line that cannot be
// read is a *MalformedError, after which Next goes on with the line after it.
// Any other error ends the report.
func (r *Reader) Next() (Line, error) {
	fields, err := r.csv.Read()
	var parseErr *csv.ParseError
	switch {
	case errors.As(err, &parseErr):
		return Line{}, &MalformedError{Line: parseErr.StartLine, Text: rawText(fields), Reason: parseErr.Err.Error()}
	case err != nil:
		return Line{}, err
	}
	no, _ := r.csv.FieldPos(0)
	line, reason := parse(no, fields, r.refundIDs)
	if reason != "" {
		return Line{}, &MalformedError{Line: no, Text: rawText(fields), Reason: reason}
	}
	return line, nil
}

func rawText(fields []string) string {
	text := strings.Join(fields, ",")
	if len(text) > maxRawText {
		text = text[:maxRawText]
	}
	return text
}

// parse checks the fields of line no, and says what is wrong when they do
// not make a line. refundIDs says whether the report has the refund_id
// column; the csv.Reader has checked that f has the header's length.
func parse(no int, f []string, refundIDs bool) (Line, string) {
	r := Record{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], ""}
	if refundIDs {
		r.RefundID = f[9]
	}
	l := Line{No: no, BalanceTransactionID: r.BalanceTransactionID, ChargeID: r.ChargeID,
		MerchantReference: r.MerchantReference, Category: r.ReportingCategory, Currency: r.Currency, RefundID: r.RefundID}
	var err error
	if l.Created, err = time.Parse(time.RFC3339, r.CreatedUTC); err != nil {
		return Line{}, fmt.Sprintf("created_utc %q is not an RFC 3339 time", r.CreatedUTC)
	}
	switch {
	case l.BalanceTransactionID == "":
		return Line{}, "balance_transaction_id is empty"
	case l.ChargeID == "":
		return Line{}, "charge_id is empty"
	case l.Category == "":
		return Line{}, "reporting_category is empty"
	case refundIDs && isRefundCategory(l.Category) && l.RefundID == "":
		return Line{}, "refund_id is empty on a " + l.Category + " line"
	case !isRefundCategory(l.Category) && l.RefundID != "":
		return Line{}, "refund_id is set on a " + l.Category + " line, which is about no refund"
	}
	if _, err := chargeonce.CurrencyDigits(r.Currency); err != nil {
		return Line{}, "currency: " + err.Error()
	}
	for _, a := range []struct {
		name, text string
		minor      *int64
	}{{"gross", r.Gross, &l.Gross}, {"fee", r.Fee, &l.Fee}, {"net", r.Net, &l.Net}} {
		if *a.minor, err = chargeonce.ParseAmount(a.text, r.Currency); err != nil {
			return Line{}, a.name + ": " + err.Error()
		}
	}
	// Checked, as a wrapped gross - fee could equal a net by accident.
	if sum, err := chargeonce.AddMinor(l.Net, l.Fee); err != nil || sum != l.Gross {
		return Line{}, fmt.Sprintf("net %s is not gross %s less fee %s", r.Net, r.Gross, r.Fee)
	}
	return l, ""
}
