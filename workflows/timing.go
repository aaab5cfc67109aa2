package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// Timing is how long the workflow of a money movement waits for what. A
// zero field takes DefaultTiming's value. The JSON names and the flags are
// older than refunds, and keep the charge's names: histories and
// deployments hold them.
type Timing struct {
	// AttemptTimeout bounds one request (the activity's StartToClose).
	AttemptTimeout time.Duration `json:"attemptTimeout"`
	// SendBudget bounds all requests of one send phase together, from the
	// phase's start; when it runs out, the outcome is unknown and lookups
	// take over, unless no request can have been processed, and then the
	// outcome is not_processed. Its flag is --charge-budget.
	SendBudget time.Duration `json:"chargeBudget"`
	// RetryInterval is the pause between requests, unless the provider's
	// Retry-After asks for another.
	RetryInterval time.Duration `json:"retryInterval"`
	// MinAge is how old an attempt is, counted from its creation, when it is
	// first looked up at the provider.
	MinAge time.Duration `json:"minAge"`
	// Interval is the first gap between lookups; later gaps back off to 2,
	// 4 and 8 Intervals (LookupTimes). It also bounds the jitter of each
	// attempt's lookups and how long a lookup may wait for its queue.
	Interval time.Duration `json:"interval"`
	// AbandonAfter is, counted from the attempt's creation, when an attempt
	// with no charge at the provider is abandoned; the last lookup happens
	// exactly then. It must exceed the provider's longest processing time and
	// stay below its key retention.
	AbandonAfter time.Duration `json:"abandonAfter"`
	// HoldMargin is how long before a hold's expiry at the provider its
	// deadline comes (chargeonce.HoldDeadline): time for the deadline's
	// void or capture to reach the provider, and to be looked up if its
	// outcome is unknown, before the provider releases the hold itself.
	HoldMargin time.Duration `json:"holdMargin,omitempty"`
	// HoldWarning is how long before a hold's deadline the alert
	// authorization_expiring fires, so that a person has time to capture
	// or void the hold as they choose.
	HoldWarning time.Duration `json:"holdWarning,omitempty"`
}

// DefaultTiming returns the timing used for a zero Timing: 3s per request,
// 10s for the charge phase, 1s between requests, the first lookup after 2
// minutes plus the key's jitter of up to a minute, then gaps of 1, 2, 4 and
// from then on 8 minutes (LookupTimes), and abandonment after 30 minutes;
// a hold's deadline an hour before its expiry, and its warning a day
// before that.
func DefaultTiming() Timing {
	return Timing{
		AttemptTimeout: 3 * time.Second,
		SendBudget:     10 * time.Second,
		RetryInterval:  time.Second,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   30 * time.Minute,
		HoldMargin:     time.Hour,
		HoldWarning:    24 * time.Hour,
	}
}

// TimingField is one field of a Timing: the flag that sets it, which also
// names it in every message, what it means, and where its value lives.
type TimingField struct {
	Flag, Usage string
	Value       *time.Duration
}

// Fields lists t's fields in a fixed order, pointing into t: the one list
// that defaults, validation, messages and the command-line flags go through.
func (t *Timing) Fields() []TimingField {
	return []TimingField{
		{"attempt-timeout", "how long one charge request may take", &t.AttemptTimeout},
		{"charge-budget", "how long all charge requests of a checkout may take before the outcome counts as unknown", &t.SendBudget},
		{"retry-interval", "pause between charge requests (a provider's Retry-After wins)", &t.RetryInterval},
		{"reconcile-min-age", "age of an unknown-outcome attempt at its first lookup at the provider", &t.MinAge},
		{"reconcile-interval", "first gap between lookups of an unknown-outcome attempt; later gaps back off to 2, 4 and 8 times it", &t.Interval},
		{"abandon-after", "age at which an attempt with no charge at the provider is abandoned; must stay below the provider's key retention", &t.AbandonAfter},
		{"hold-margin", "how long before a hold's expiry at the provider its deadline voids or captures it", &t.HoldMargin},
		{"hold-warning", "how long before a hold's deadline the alert authorization_expiring fires", &t.HoldWarning},
	}
}

// WithDefaults fills the zero fields from DefaultTiming, so that a
// configuration may set only the timings it changes.
func (t Timing) WithDefaults() Timing {
	d := DefaultTiming()
	defaults := d.Fields()
	for i, f := range t.Fields() {
		if *f.Value == 0 {
			*f.Value = *defaults[i].Value
		}
	}
	return t
}

// Validate reports every problem that makes t unusable, naming each field
// by its flag, which is how the people who set a timing know it.
func (t Timing) Validate() error {
	var errs []error
	for _, f := range t.Fields() {
		if *f.Value <= 0 {
			errs = append(errs, fmt.Errorf("timing: --%s must be positive, got %s", f.Flag, *f.Value))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if t.AttemptTimeout > t.SendBudget {
		errs = append(errs, fmt.Errorf("timing: --attempt-timeout %s exceeds --charge-budget %s, so not even one request fits the budget", t.AttemptTimeout, t.SendBudget))
	}
	if t.RetryInterval >= t.SendBudget {
		errs = append(errs, fmt.Errorf("timing: --retry-interval %s must be shorter than --charge-budget %s, or no retry fits the budget", t.RetryInterval, t.SendBudget))
	}
	if t.SendBudget >= t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: --charge-budget %s must be shorter than --abandon-after %s, or an attempt could be abandoned while it is still being charged", t.SendBudget, t.AbandonAfter))
	}
	if t.MinAge > t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: --reconcile-min-age %s exceeds --abandon-after %s, so the attempt would be abandoned before its first lookup", t.MinAge, t.AbandonAfter))
	}
	if t.SendBudget+t.MinAge > t.AbandonAfter {
		errs = append(errs, fmt.Errorf("timing: --charge-budget %s plus --reconcile-min-age %s exceeds --abandon-after %s, so even the first charge could still be processing when the attempt is abandoned", t.SendBudget, t.MinAge, t.AbandonAfter))
	}
	return errors.Join(errs...)
}

// String names every field as the worker's flags name it, such as
// "attempt-timeout 3s, …, abandon-after 30m0s", so that an operator can tell
// two timings apart field by field.
func (t Timing) String() string {
	fields := t.Fields()
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Flag + " " + f.Value.String()
	}
	return strings.Join(parts, ", ")
}

// TimingVersion is the format version of the published timing: the one
// Encode writes and the only one DecodeTiming reads. It is a major number.
// Within a version, readers ignore the fields they do not know and take
// DefaultTiming's value for a field that is missing, so a program may add a
// field and keep the version as long as running with the field's default in
// its place is safe: that is what every checkout an older API starts and
// every workflow an older worker runs will do. A change that older programs
// must not ignore (a field whose default is unsafe, a field removed or
// renamed, a unit or meaning changed) takes the next version, which older
// programs refuse rather than misread.
const TimingVersion = 1

// timingDocument is a Timing as the workers publish it: its fields beside
// the format version.
type timingDocument struct {
	Version int `json:"version"`
	Timing
}

// Encode is the form in which the workers publish their timing in the
// merchant database: the Timing's JSON, as the workflow input carries it,
// with a "version" member, TimingVersion, beside its fields.
func (t Timing) Encode() ([]byte, error) {
	b, err := json.Marshal(timingDocument{Version: TimingVersion, Timing: t})
	if err != nil {
		return nil, fmt.Errorf("timing: encode: %w", err)
	}
	return b, nil
}

// DecodeTiming reads a published timing and validates it, tolerantly within
// TimingVersion (see there), so that a rolling deploy in either order keeps
// checkouts running: a field from a newer program is ignored, and one that
// an older program did not write takes DefaultTiming's value, the same
// reading the payment workflow gives the Timing in its input. A document
// without a version is version 1, as published before versions existed.
// Any other version is an error: a newer program published a timing that
// this one would misread.
func DecodeTiming(b []byte) (Timing, error) {
	var head *struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return Timing{}, fmt.Errorf("timing: decode: %w", err)
	}
	if head == nil {
		return Timing{}, errors.New("timing: decode: null is not a timing")
	}
	if head.Version != nil && *head.Version != TimingVersion {
		return Timing{}, fmt.Errorf("timing: format version %d, and this program reads only version %d: "+
			"a newer program published this timing in a form that this one would misread; upgrade this program", *head.Version, TimingVersion)
	}
	doc := timingDocument{Timing: DefaultTiming()}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Timing{}, fmt.Errorf("timing: decode: %w", err)
	}
	if err := doc.Timing.Validate(); err != nil {
		return Timing{}, err
	}
	return doc.Timing, nil
}

// lastSendAt is the latest time a charge may still be sent for an attempt
// created at created. A request sent then ends within SendBudget, and the
// provider has MinAge more to finish processing it, by the abandon deadline:
// the deadline's lookup must see every charge the attempt can ever have.
func (t Timing) lastSendAt(created time.Time) time.Time {
	return created.Add(t.AbandonAfter - t.SendBudget - t.MinAge)
}

// lookupDoublings is how often the gap between two lookups doubles: from
// Interval to 2, 4 and then 8 Intervals, where it stays. An attempt that has
// gone unanswered for long is less likely to be answered at the next
// lookup, while the young ones, which a recovering provider answers first,
// are looked up often.
const lookupDoublings = 3

// LookupJitter is the offset of the lookup grid of the attempt with this
// key: a fraction of Interval taken from a hash of the key. Attempts
// created together, say during an outage, are then looked up spread over an
// Interval instead of in one herd. It depends on nothing but the key and
// the timing, so every replay and every worker computes the same grid. Like
// the other lookup methods it takes a valid timing (see Validate).
func (t Timing) LookupJitter(key string) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key)) // a hash.Hash never fails to write
	return time.Duration(h.Sum64() % uint64(t.Interval))
}

// LookupTimes are the times at which an attempt created at created, with
// this key, is looked up when the provider never holds a charge for it:
// first at MinAge plus the key's jitter, then with gaps of 1, 2, 4 and from
// then on 8 Intervals, and last exactly at AbandonAfter. A grid time at or
// past AbandonAfter gives way to that last lookup.
func (t Timing) LookupTimes(key string, created time.Time) []time.Time {
	return t.lookupTimes(t.LookupJitter(key), created)
}

// LookupsPerAttempt is how many lookups an attempt that is never answered
// makes, the deadline's included, for the jitter that makes the most.
func (t Timing) LookupsPerAttempt() int {
	return len(t.lookupTimes(0, time.Time{}))
}

// LookupDemand is how many lookups a second open attempts ask for on
// average: each makes LookupsPerAttempt lookups over its AbandonAfter, so
//
//	demand = open × LookupsPerAttempt / AbandonAfter
//
// Attempts created in one burst ask for more while they are young: one
// lookup each per Interval at first, half that after the next gap.
func (t Timing) LookupDemand(open int) float64 {
	return float64(open) * float64(t.LookupsPerAttempt()) / t.AbandonAfter.Seconds()
}

// LookupCapacity is how many open attempts a provider that allows rate
// lookups a second serves, the open count whose LookupDemand is rate:
//
//	capacity = rate × AbandonAfter / LookupsPerAttempt
func (t Timing) LookupCapacity(rate float64) int {
	return int(rate * t.AbandonAfter.Seconds() / float64(t.LookupsPerAttempt()))
}

func (t Timing) lookupTimes(jitter time.Duration, created time.Time) []time.Time {
	abandon := created.Add(t.AbandonAfter)
	var times []time.Time
	at := t.nextLookupAt(jitter, created, created, 0)
	for {
		times = append(times, at)
		if !at.Before(abandon) {
			return times
		}
		at = t.nextLookupAt(jitter, created, at, len(times))
	}
}

// nextLookupAt is when the provider is next asked about an attempt created
// at created, on the grid of LookupTimes offset by jitter, given that checks
// lookups have been made and the time is now. Slow lookups do not push the
// grid, so the last lookup falls exactly on the abandon deadline; a time in
// the past means "at once". After the deadline, when the last lookup could
// not get an answer, the provider is asked again every Interval until it
// answers: an attempt is abandoned only on the provider's word that it
// holds no charge.
func (t Timing) nextLookupAt(jitter time.Duration, created, now time.Time, checks int) time.Time {
	return t.nextLookupBefore(jitter, created, created.Add(t.AbandonAfter), now, checks)
}

// nextLookupBefore is nextLookupAt with the grid's last lookup at deadline
// instead of the abandon deadline: the refunds' grid ends at their key's
// retention horizon (refundHorizon).
func (t Timing) nextLookupBefore(jitter time.Duration, created, deadline, now time.Time, checks int) time.Time {
	first := created.Add(min(t.MinAge+jitter, deadline.Sub(created)))
	if checks == 0 || now.Before(first) {
		return first
	}
	if !now.Before(deadline) {
		return now.Add(t.Interval)
	}
	if next := nextGridTime(first, now, t.Interval); next.Before(deadline) {
		return next
	}
	return deadline
}

// longestLookupGap is the gap between two lookups once the grid has backed
// off all the way: 8 Intervals.
func (t Timing) longestLookupGap() time.Duration {
	return t.Interval << lookupDoublings
}

// refundLastSendAt is the latest time a refund created at created may still
// be sent when the provider keeps keys for retention: a request sent then
// ends within SendBudget, and the provider has MinAge more to finish it,
// by the horizon (refundHorizon), whose lookup must see every refund the
// key can ever have, and which comes before the provider forgets the key.
// So the window is bounded by the key's retention alone, never by the
// payment's abandon deadline. Without the retention (0, not read yet) it is
// the earliest the retention allows, since the worker keeps AbandonAfter
// below it.
func (t Timing) refundLastSendAt(created time.Time, retention time.Duration) time.Time {
	return t.refundHorizon(created, retention).Add(-t.SendBudget - t.MinAge)
}

// RefundSendWindow is how long after its creation a refund may still be
// sent when the provider keeps keys for retention (refundLastSendAt). The
// worker refuses to start when its refund sweep could start a refund later
// than that.
func (t Timing) RefundSendWindow(retention time.Duration) time.Duration {
	var created time.Time
	return t.refundLastSendAt(created, retention).Sub(created)
}

// refundHorizon is when the lookups of an unknown refund created at created
// give way to a person: one longest lookup gap before the provider, which
// keeps keys for retention, forgets the refund's key, so that the person
// still finds the key known at the provider; and never before the refund's
// requests have all ended.
func (t Timing) refundHorizon(created time.Time, retention time.Duration) time.Time {
	h := created.Add(retention - t.longestLookupGap())
	if end := created.Add(t.AbandonAfter); h.Before(end) {
		return end
	}
	return h
}

// nextGridTime is the first time after now on the backoff grid that starts
// at first with a gap of interval.
func nextGridTime(first, now time.Time, interval time.Duration) time.Time {
	at, gap := first, interval
	for range lookupDoublings {
		if at.After(now) {
			return at
		}
		at = at.Add(gap)
		gap *= 2
	}
	if at.After(now) {
		return at
	}
	return at.Add((now.Sub(at)/gap + 1) * gap)
}
