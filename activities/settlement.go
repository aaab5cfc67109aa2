package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/provider/settlement"
	"chargeonce/store"
)

// ErrTypeReportUnreadable: the provider's settlement report cannot be read
// at all (its header is wrong, or the date is refused). Not retryable: a
// human must look.
const ErrTypeReportUnreadable = "SettlementReportUnreadable"

// SettlementExceptionsMetric is the gauge of the exceptions of the latest
// settlement run of each provider, by provider and kind.
const SettlementExceptionsMetric = "chargeonce_settlement_exceptions"

// SettlementMetrics exports what the latest settlement run found. A nil
// *SettlementMetrics exports nothing.
type SettlementMetrics struct {
	exceptions *prometheus.GaugeVec
}

// NewSettlementMetrics creates the gauge, every kind of each of the
// providers at 0, and registers it with reg; it panics when it is
// registered already, a wiring mistake.
func NewSettlementMetrics(reg prometheus.Registerer, providers ...string) *SettlementMetrics {
	m := &SettlementMetrics{exceptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: SettlementExceptionsMetric,
		Help: "Exceptions of the latest settlement run of each provider on this worker, by provider and kind (unknown_charge, missing_in_report, ...).",
	}, []string{"provider", "kind"})}
	for _, p := range providers {
		for _, k := range chargeonce.ExceptionKinds {
			m.exceptions.WithLabelValues(p, string(k))
		}
	}
	reg.MustRegister(m.exceptions)
	return m
}

func (m *SettlementMetrics) ran(provider string, byKind map[chargeonce.ExceptionKind]int) {
	if m == nil {
		return
	}
	for _, k := range chargeonce.ExceptionKinds {
		m.exceptions.WithLabelValues(provider, string(k)).Set(float64(byKind[k]))
	}
}

// Books is what the settlement reads, and the one repair it makes: a
// charge for an attempt that did not succeed with it goes to
// RecordLateCharge. A store.Store is one.
type Books interface {
	store.SettlementStore
	RecordLateCharge(ctx context.Context, c store.LateCharge) (chargeonce.LateChargeDecision, *store.Refund, error)
}

// Settlement holds the dependencies of the settlement activities. Register
// it with a worker as a struct: each exported method becomes an activity.
type Settlement struct {
	// Reports download each provider's settlement reports, by the
	// provider's name. Each provider's books are its own: a run reads one
	// provider's report, matches it against the attempts and refunds sent
	// to that provider alone, and records its result under the provider,
	// so that another provider's charges are neither missing from its
	// report nor mistaken for its charges of the same id.
	Reports map[string]*settlement.Client
	// Default names the provider whose books a run settles when its input
	// names none: a run started before each provider's books were settled
	// apart, when the default provider's were the only ones.
	Default string
	// Store is the merchant's database.
	Store Books
	// GraceDays is how many days after its date a charge may first appear
	// in a report before its attempt is missing_in_report: the worker's
	// setting, 0 or more, and its one carrier. Every run of a date,
	// scheduled or started by hand, applies it, and the daily run asks for
	// it (GracePeriod) to know how many days back to settle again.
	GraceDays int
	// Now reads the clock that ends grace periods; nil means time.Now.
	Now func() time.Time
	// Logger receives what each run found; nil means slog.Default().
	Logger *slog.Logger
	// Metrics exports the latest run's exceptions; nil exports nothing.
	Metrics *SettlementMetrics
}

func (s *Settlement) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Settlement) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// StageReportInput is the input of StageReport.
type StageReportInput struct {
	// Provider names the provider whose report is staged; empty means
	// Settlement.Default.
	Provider string `json:"Provider,omitempty"`
	// Date is the report date, as in 2026-03-14.
	Date string `json:"Date"`
}

// reports returns the provider that a run's input names, or the default
// one, and the client of its reports; a provider whose reports this worker
// does not read is a bad input, which no retry mends.
func (s *Settlement) reports(named string) (string, *settlement.Client, error) {
	provider := cmp.Or(named, s.Default)
	c := s.Reports[provider]
	if c == nil {
		return "", nil, nonRetryable(ErrTypeInvalidRequest,
			fmt.Sprintf("settlement: this worker reads no settlement reports of provider %q (it reads those of %s)",
				provider, strings.Join(slices.Sorted(maps.Keys(s.Reports)), ", ")))
	}
	return provider, c, nil
}

// StageReportResult counts what StageReport staged.
type StageReportResult struct {
	// Lines counts the report's lines, malformed ones included.
	Lines int `json:"Lines"`
	// Malformed counts the lines that cannot be read.
	Malformed int `json:"Malformed"`
}

// StageReport downloads the report of a date and stages its lines in the
// store, replacing what a previous run staged, in batches: it holds one
// batch in memory however long the report is. A malformed line is staged as
// such. It heartbeats the lines staged so far.
func (s *Settlement) StageReport(ctx context.Context, in StageReportInput) (StageReportResult, error) {
	if _, err := settlement.ParseDate(in.Date); err != nil {
		return StageReportResult{}, nonRetryable(ErrTypeInvalidRequest, "stage report: "+err.Error())
	}
	provider, reports, err := s.reports(in.Provider)
	if err != nil {
		return StageReportResult{}, err
	}
	report, err := reports.Open(ctx, in.Date)
	switch {
	case errors.Is(err, settlement.ErrUnreadable):
		return StageReportResult{}, nonRetryable(ErrTypeReportUnreadable, err.Error())
	case err != nil:
		return StageReportResult{}, err
	}
	defer report.Close()
	if err := s.Store.ClearSettlementLines(ctx, provider, in.Date); err != nil {
		return StageReportResult{}, err
	}
	var (
		res   StageReportResult
		batch = make([]store.SettlementLine, 0, store.MaxSettlementBatch)
	)
	flush := func() error {
		if err := s.Store.AddSettlementLines(ctx, batch); err != nil {
			return err
		}
		batch = batch[:0]
		activity.RecordHeartbeat(ctx, res.Lines)
		return nil
	}
	for {
		line, err := report.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var malformed *settlement.MalformedError
		switch {
		case errors.As(err, &malformed):
			res.Malformed++
			batch = append(batch, store.SettlementLine{Provider: provider, Date: in.Date, LineNo: malformed.Line, Problem: malformed.Reason, Raw: malformed.Text})
		case err != nil:
			return StageReportResult{}, fmt.Errorf("stage report of %s at %s: line %d: %w", in.Date, provider, res.Lines+2, err)
		default:
			batch = append(batch, stagedLine(provider, in.Date, line))
		}
		res.Lines++
		if len(batch) == store.MaxSettlementBatch {
			if err := flush(); err != nil {
				return StageReportResult{}, err
			}
		}
	}
	if err := flush(); err != nil {
		return StageReportResult{}, err
	}
	s.logger().Info("settlement report staged", "provider", provider, "date", in.Date, "lines", res.Lines, "malformed", res.Malformed)
	return res, nil
}

func stagedLine(provider, date string, l settlement.Line) store.SettlementLine {
	return store.SettlementLine{Provider: provider, Date: date, LineNo: l.No, BalanceTransactionID: l.BalanceTransactionID, Created: l.Created,
		ChargeID: l.ChargeID, MerchantReference: l.MerchantReference, Category: l.Category, RefundID: l.RefundID,
		Gross: l.Gross, Fee: l.Fee, Net: l.Net, Currency: l.Currency}
}

// GracePeriodResult is the result of GracePeriod.
type GracePeriodResult struct {
	// Days is the worker's grace period, Settlement.GraceDays.
	Days int `json:"Days"`
}

// GracePeriod reports the worker's grace period. The daily settlement runs
// it as a local activity, which records the answer in its history, so that
// the run settles as many days back as the matching waits, and replays the
// same whatever the worker's setting is by then.
func (s *Settlement) GracePeriod(context.Context) (GracePeriodResult, error) {
	return GracePeriodResult{Days: s.GraceDays}, nil
}

// MatchReportInput is the input of MatchReport.
type MatchReportInput struct {
	// Provider names the provider whose staged report is matched; empty
	// means Settlement.Default.
	Provider string `json:"Provider,omitempty"`
	// Date is the report date, whose lines StageReport staged.
	Date string `json:"Date"`
	// RunID names this run's exceptions; a retry with the same RunID
	// rewrites them.
	RunID string `json:"RunID"`
}

// MatchReportResult is what the run found: the counts of the
// store.SettlementRun it recorded.
type MatchReportResult struct {
	Status     store.SettlementStatus           `json:"Status"`
	Lines      int                              `json:"Lines"`
	Matched    int                              `json:"Matched"`
	Awaiting   int                              `json:"Awaiting"`
	Exceptions int                              `json:"Exceptions"`
	ByKind     map[chargeonce.ExceptionKind]int `json:"ByKind"`
	Totals     []store.SettlementTotal          `json:"Totals"`
}

// MatchReport matches the staged report of a date against the charges the
// books expect that day (the succeeded attempts created that day, and the
// holds captured that day, for what was captured), by charge id and then
// by merchant reference, and its refund lines against the succeeded
// refunds created that day, by refund id, in batches, and records the run and its exceptions: a rerun
// replaces the previous result. A charge for an attempt that did not
// succeed with it is repaired (adopted by its order, or refunded) and
// recorded as a repair. Every unknown charge and every late charge refunded
// is logged as an alert. The grace period is the worker's, s.GraceDays.
func (s *Settlement) MatchReport(ctx context.Context, in MatchReportInput) (MatchReportResult, error) {
	day, err := settlement.ParseDate(in.Date)
	if err != nil || in.RunID == "" {
		return MatchReportResult{}, nonRetryable(ErrTypeInvalidRequest,
			fmt.Sprintf("match report: need a date and a run ID, got %q and %q", in.Date, in.RunID))
	}
	provider, _, err := s.reports(in.Provider)
	if err != nil {
		return MatchReportResult{}, err
	}
	m := newMatcher(ctx, s.Store, provider, day, in, s.GraceDays, s.now(), s.logger())
	run, err := m.match()
	if err != nil {
		return MatchReportResult{}, err
	}
	if err := s.Store.FinishSettlementRun(ctx, run); err != nil {
		return MatchReportResult{}, err
	}
	s.Metrics.ran(provider, run.ByKind)
	s.logger().Info("settlement run recorded", "provider", provider, "date", in.Date, "status", run.Status, "lines", run.Lines,
		"matched", run.Matched, "awaiting", run.Awaiting, "exceptions", run.Exceptions)
	return MatchReportResult{Status: run.Status, Lines: run.Lines, Matched: run.Matched, Awaiting: run.Awaiting,
		Exceptions: run.Exceptions, ByKind: run.ByKind, Totals: run.Totals}, nil
}
