package workflows_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/workflows"
)

func TestTiming_Validate(t *testing.T) {
	valid := workflows.DefaultTiming()
	with := func(change func(*workflows.Timing)) workflows.Timing {
		t := valid
		change(&t)
		return t
	}
	tests := []struct {
		name   string
		timing workflows.Timing
		want   []string
	}{
		{"default", valid, nil},
		{"zero and negative", with(func(t *workflows.Timing) { t.MinAge, t.Interval = 0, -time.Second }),
			[]string{"--reconcile-min-age must be positive, got 0s", "--reconcile-interval must be positive, got -1s"}},
		{"attempt longer than the budget", with(func(t *workflows.Timing) { t.AttemptTimeout = 11 * time.Second }),
			[]string{"--attempt-timeout 11s exceeds --charge-budget 10s"}},
		{"no room for a retry", with(func(t *workflows.Timing) { t.RetryInterval = 10 * time.Second }),
			[]string{"--retry-interval 10s must be shorter than --charge-budget 10s"}},
		{"abandoned while charging", with(func(t *workflows.Timing) { t.AbandonAfter = 10 * time.Second; t.MinAge = time.Second }),
			[]string{"--charge-budget 10s must be shorter than --abandon-after 10s"}},
		{"abandoned before the first lookup", with(func(t *workflows.Timing) { t.MinAge = time.Hour }),
			[]string{"--reconcile-min-age 1h0m0s exceeds --abandon-after 30m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.timing.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestTiming_EncodeDecodeRoundTrips(t *testing.T) {
	timing := workflows.Timing{
		AttemptTimeout: 1500 * time.Millisecond,
		SendBudget:     5 * time.Second,
		RetryInterval:  500 * time.Millisecond,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   17*time.Minute + 123*time.Nanosecond,
		HoldMargin:     30 * time.Minute,
		HoldWarning:    12 * time.Hour,
	}
	b, err := timing.Encode()
	require.NoError(t, err)
	require.Contains(t, string(b), `"version":1,`, "the format version is published with the fields")

	got, err := workflows.DecodeTiming(b)
	require.NoError(t, err)
	require.Equal(t, timing, got)
}

// Today's published timings, from before the format version, are version 1.
func TestDecodeTiming_ReadsATimingPublishedWithoutAVersionAsVersion1(t *testing.T) {
	got, err := workflows.DecodeTiming([]byte(`{"attemptTimeout":3000000000,"chargeBudget":10000000000,"retryInterval":1000000000,` +
		`"minAge":120000000000,"interval":60000000000,"abandonAfter":1020000000000}`))
	require.NoError(t, err)
	want := workflows.DefaultTiming()
	want.AbandonAfter = 17 * time.Minute
	require.Equal(t, want, got)
}

func TestDecodeTiming_IgnoresFieldsItDoesNotKnowAndDefaultsThoseNotWritten(t *testing.T) {
	got, err := workflows.DecodeTiming([]byte(`{"version":1,"abandonAfter":1020000000000,"lookupSpread":{"max":"5m"}}`))
	require.NoError(t, err)
	want := workflows.DefaultTiming()
	want.AbandonAfter = 17 * time.Minute
	require.Equal(t, want, got)
}

func TestDecodeTiming_RefusesWhatIsNotAValidTimingOfItsVersion(t *testing.T) {
	valid, err := workflows.DefaultTiming().Encode()
	require.NoError(t, err)
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", `abandon-after 30m`, "timing: decode: invalid character"},
		{"not an object", `[1]`, "timing: decode: json: cannot unmarshal array"},
		{"null", `null`, "timing: decode: null is not a timing"},
		{"a newer version", strings.Replace(string(valid), `"version":1`, `"version":2`, 1),
			"timing: format version 2, and this program reads only version 1: " +
				"a newer program published this timing in a form that this one would misread; upgrade this program"},
		{"a version that is no number", strings.Replace(string(valid), `"version":1`, `"version":"1"`, 1), "timing: decode: json: cannot unmarshal string"},
		{"a field of the wrong type", strings.Replace(string(valid), `"attemptTimeout":3000000000`, `"attemptTimeout":"3s"`, 1), "timing: decode: json: cannot unmarshal string"},
		{"a zero field", strings.Replace(string(valid), `"abandonAfter":1800000000000`, `"abandonAfter":0`, 1), "--abandon-after must be positive, got 0s"},
		{"inconsistent", strings.Replace(string(valid), `"attemptTimeout":3000000000`, `"attemptTimeout":11000000000`, 1), "--attempt-timeout 11s exceeds --charge-budget 10s"},
		{"data after the timing", string(valid) + ` {}`, "timing: decode: invalid character '{' after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := workflows.DecodeTiming([]byte(tt.data))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestTiming_StringNamesEveryFieldByItsFlag(t *testing.T) {
	require.Equal(t,
		"attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 30m0s, hold-margin 1h0m0s, hold-warning 24h0m0s",
		workflows.DefaultTiming().String())
}

// key is a key whose jitter the tests pin: the jitter must never change for
// a key, or running payments would move their lookups under a new release.
const key = "01a1d96c-e23d-77bf-801e-9df969c1d378"

var created = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func TestTiming_LookupJitterIsPinnedByTheKeyAndTheInterval(t *testing.T) {
	tests := []struct {
		interval time.Duration
		want     time.Duration
	}{
		{time.Minute, 11913951959 * time.Nanosecond},
		{15 * time.Second, 11913951959 * time.Nanosecond},
		{time.Second, 913951959 * time.Nanosecond},
		{time.Nanosecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.interval.String(), func(t *testing.T) {
			timing := workflows.DefaultTiming()
			timing.Interval = tt.interval
			require.Equal(t, tt.want, timing.LookupJitter(key))
		})
	}
}

// sequentialKeys are n keys as one instant's UUIDv7 keys look: alike but for
// their last digits, the hardest case for spreading them.
func sequentialKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("01a22b83-2a17-7017-be92-%012x", i)
	}
	return keys
}

func TestTiming_LookupJitterSpreadsKeysOverTheInterval(t *testing.T) {
	timing := workflows.DefaultTiming()
	const buckets = 10
	counts := make([]int, buckets)
	for _, k := range sequentialKeys(1000) {
		j := timing.LookupJitter(k)
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.Less(t, j, timing.Interval)
		counts[j*buckets/timing.Interval]++
	}
	// 100 each on average; a herd would fill one bucket.
	for i, n := range counts {
		require.InDelta(t, 100, n, 40, "tenth %d of the interval holds %d of 1000 keys: %v", i, n, counts)
	}
}

func TestTiming_LookupTimesBackOffFromMinAgePlusJitterAndEndAtTheDeadline(t *testing.T) {
	timing := workflows.DefaultTiming()
	j := timing.LookupJitter(key)
	at := func(d time.Duration) time.Time { return created.Add(d) }

	require.Equal(t, []time.Time{
		at(2*time.Minute + j), at(3*time.Minute + j), at(5*time.Minute + j), at(9*time.Minute + j),
		at(17*time.Minute + j), at(25*time.Minute + j), at(30 * time.Minute),
	}, timing.LookupTimes(key, created))
}

// timings are timings of every shape the schedule must handle.
func timings() map[string]workflows.Timing {
	with := func(minAge, interval, abandonAfter time.Duration) workflows.Timing {
		t := workflows.DefaultTiming()
		t.MinAge, t.Interval, t.AbandonAfter = minAge, interval, abandonAfter
		return t
	}
	return map[string]workflows.Timing{
		"default":                        workflows.DefaultTiming(),
		"bench":                          with(5*time.Second, 15*time.Second, 15*time.Minute),
		"chaos":                          with(2*time.Second, time.Second, 8*time.Second),
		"a long deadline":                with(2*time.Minute, time.Minute, 23*time.Hour),
		"an interval longer than a life": with(2*time.Minute, time.Hour, 30*time.Minute),
		"first lookup at the deadline":   with(30*time.Minute, time.Minute, 30*time.Minute),
	}
}

func TestTiming_LookupTimesKeepTheirShapeForEveryKeyAndTiming(t *testing.T) {
	for name, timing := range timings() {
		t.Run(name, func(t *testing.T) {
			abandon := created.Add(timing.AbandonAfter)
			for _, k := range sequentialKeys(200) {
				times := timing.LookupTimes(k, created)
				last := len(times) - 1

				require.Equal(t, abandon, times[last], "the last lookup is exactly at the deadline")
				require.Equal(t, min(timing.MinAge+timing.LookupJitter(k), timing.AbandonAfter), times[0].Sub(created),
					"the first is at MinAge plus the jitter")
				for i := range last {
					require.True(t, times[i].Before(abandon), "lookup %d of %d is before the deadline", i, len(times))
					gap := times[i+1].Sub(times[i])
					require.Positive(t, gap)
					if i+1 < last {
						// Gaps of 1, 2, 4, then 8 Intervals; only the gap to
						// the deadline is cut short.
						require.Equal(t, timing.Interval*time.Duration(1<<min(i, 3)), gap, "gap %d", i)
					} else {
						require.LessOrEqual(t, gap, timing.Interval*time.Duration(1<<min(i, 3)), "the gap to the deadline")
					}
				}
				require.LessOrEqual(t, len(times), timing.LookupsPerAttempt(), "no key makes more lookups than LookupsPerAttempt")
			}
		})
	}
}

func TestTiming_LookupsPerAttemptBackOffFromTheOldEveryInterval(t *testing.T) {
	tests := []struct {
		name   string
		timing workflows.Timing
		// everyInterval is what lookups every Interval from MinAge to the
		// deadline made.
		want, everyInterval int
	}{
		{"default: 2m, 3m, 5m, 9m, 17m, 25m, 30m", timings()["default"], 7, 29},
		{"bench: 5s, 20s, 50s, 110s, 230s, then every 2m to 15m", timings()["bench"], 11, 61},
		{"chaos: 2s, 3s, 5s, 8s", timings()["chaos"], 4, 7},
		{"a long deadline: 8m apart for most of a day", timings()["a long deadline"], 176, 1379},
		{"an interval longer than a life: 2m and 30m", timings()["an interval longer than a life"], 2, 2},
		{"first lookup at the deadline", timings()["first lookup at the deadline"], 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.timing.LookupsPerAttempt())
			require.LessOrEqual(t, tt.want, tt.everyInterval)
		})
	}
}

func TestTiming_LookupCapacityIsRateTimesAbandonAfterOverLookupsPerAttempt(t *testing.T) {
	timing := workflows.DefaultTiming() // 7 lookups in 1800s

	require.Equal(t, 12857, timing.LookupCapacity(50), "50/s × 1800s / 7")
	require.LessOrEqual(t, timing.LookupDemand(12857), 50.0)
	require.Greater(t, timing.LookupDemand(12858), 50.0)
	require.InDelta(t, 10000*7/1800.0, timing.LookupDemand(10000), 1e-9)
	require.Zero(t, timing.LookupDemand(0))
	require.Equal(t, 257, timing.LookupCapacity(1))
}
