package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Timing is how long the payment workflow waits for what. A zero field takes
// DefaultTiming's value.
type Timing struct {
	// AttemptTimeout bounds one charge request (the activity's StartToClose).
	AttemptTimeout time.Duration `json:"attemptTimeout"`
	// ChargeBudget bounds all charge requests of one charge phase together,
	// from the phase's start; when it runs out, the outcome is unknown and
	// reconciliation takes over, unless no request can have been processed,
	// and then the attempt is not_processed.
	ChargeBudget time.Duration `json:"chargeBudget"`
	// RetryInterval is the pause between charge requests, unless the
	// provider's Retry-After asks for another.
	RetryInterval time.Duration `json:"retryInterval"`
	// MinAge is how old an attempt is, counted from its creation, when it is
	// first looked up at the provider.
	MinAge time.Duration `json:"minAge"`
	// Interval is the time between lookups after the first.
	Interval time.Duration `json:"interval"`
	// AbandonAfter is, counted from the attempt's creation, when an attempt
	// with no charge at the provider is abandoned; the last lookup happens
	// exactly then. It must exceed the provider's longest processing time and
	// stay below its key retention.
	AbandonAfter time.Duration `json:"abandonAfter"`
}

// DefaultTiming returns the timing used for a zero Timing: 3s per request,
// 10s for the charge phase, 1s between requests, the first lookup after 2
// minutes, then every minute, and abandonment after 30 minutes.
func DefaultTiming() Timing {
	return Timing{
		AttemptTimeout: 3 * time.Second,
		ChargeBudget:   10 * time.Second,
		RetryInterval:  time.Second,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   30 * time.Minute,
	}
}

// WithDefaults fills the zero fields from DefaultTiming, so that a
// configuration may set only the timings it changes.
func (t Timing) WithDefaults() Timing {
	d := DefaultTiming()
	for _, f := range []struct{ v, def *time.Duration }{
		{&t.AttemptTimeout, &d.AttemptTimeout},
		{&t.ChargeBudget, &d.ChargeBudget},
		{&t.RetryInterval, &d.RetryInterval},
		{&t.MinAge, &d.MinAge},
		{&t.Interval, &d.Interval},
		{&t.AbandonAfter, &d.AbandonAfter},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return t
}

// Validate reports every problem that makes t unusable.
func (t Timing) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"AttemptTimeout", t.AttemptTimeout},
		{"ChargeBudget", t.ChargeBudget},
		{"RetryInterval", t.RetryInterval},
		{"MinAge", t.MinAge},
		{"Interval", t.Interval},
		{"AbandonAfter", t.AbandonAfter},
	} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("timing: %s must be positive, got %s", f.name, f.v))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if t.AttemptTimeout > t.ChargeBudget {
		errs = append(errs, fmt.Errorf("timing: AttemptTimeout %s exceeds ChargeBudget %s, so not even one request fits the budget", t.AttemptTimeout, t.ChargeBudget))
	}
	if t.RetryInterval >= t.ChargeBudget {
		errs = append(errs, fmt.Errorf("timing: RetryInterval %s must be shorter than ChargeBudget %s, or no retry fits the budget", t.RetryInterval, t.ChargeBudget))
	}
	if t.ChargeBudget >= t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: ChargeBudget %s must be shorter than AbandonAfter %s, or an attempt could be abandoned while it is still being charged", t.ChargeBudget, t.AbandonAfter))
	}
	if t.MinAge > t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: MinAge %s exceeds AbandonAfter %s, so the attempt would be abandoned before its first lookup", t.MinAge, t.AbandonAfter))
	}
	if t.ChargeBudget+t.MinAge > t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: ChargeBudget %s plus MinAge %s exceeds AbandonAfter %s, so even the first charge could still be processing when the attempt is abandoned", t.ChargeBudget, t.MinAge, t.AbandonAfter))
	}
	return errors.Join(errs...)
}

// String names every field as the worker's flags name it, such as
// "attempt-timeout 3s, …, abandon-after 30m0s", so that an operator can tell
// two timings apart field by field.
func (t Timing) String() string {
	fields := []struct {
		flag string
		v    time.Duration
	}{
		{"attempt-timeout", t.AttemptTimeout},
		{"charge-budget", t.ChargeBudget},
		{"retry-interval", t.RetryInterval},
		{"reconcile-min-age", t.MinAge},
		{"reconcile-interval", t.Interval},
		{"abandon-after", t.AbandonAfter},
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.flag + " " + f.v.String()
	}
	return strings.Join(parts, ", ")
}

// Encode is the form in which the workers publish their timing in the
// merchant database: the JSON that the workflow input carries too.
func (t Timing) Encode() ([]byte, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("timing: encode: %w", err)
	}
	return b, nil
}

// DecodeTiming reads what Encode wrote and validates it. A field it does not
// know, say from a newer program, is an error rather than dropped: a timing
// is only of use whole. Nor are missing fields defaulted, because what was
// published is complete.
func DecodeTiming(b []byte) (Timing, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Timing
	if err := dec.Decode(&t); err != nil {
		return Timing{}, fmt.Errorf("timing: decode: %w", err)
	}
	if dec.More() {
		return Timing{}, errors.New("timing: decode: data after the timing")
	}
	if err := t.Validate(); err != nil {
		return Timing{}, err
	}
	return t, nil
}

// lastSendAt is the latest time a charge may still be sent for an attempt
// created at created. A request sent then ends within ChargeBudget, and the
// provider has MinAge more to finish processing it, by the abandon deadline:
// the deadline's lookup must see every charge the attempt can ever have.
func (t Timing) lastSendAt(created time.Time) time.Time {
	return created.Add(t.AbandonAfter - t.ChargeBudget - t.MinAge)
}

// nextCheckAt is when the provider is next asked about an attempt created at
// created, given that checks lookups have been made so far and the time is
// now. The lookups follow a fixed grid, created+MinAge+k*Interval, so that
// slow lookups do not push the schedule, and the last one falls exactly on
// created+AbandonAfter. A time in the past means "at once". After the
// deadline, when the last lookup could not get an answer, the provider is
// asked again every Interval until it answers: an attempt is abandoned only
// on the provider's word that it holds no charge.
func (t Timing) nextCheckAt(created, now time.Time, checks int) time.Time {
	first := created.Add(t.MinAge)
	if checks == 0 || now.Before(first) {
		return first
	}
	abandon := created.Add(t.AbandonAfter)
	if !now.Before(abandon) {
		return now.Add(t.Interval)
	}
	next := first.Add((now.Sub(first)/t.Interval + 1) * t.Interval)
	if next.After(abandon) {
		return abandon
	}
	return next
}
