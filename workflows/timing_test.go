package workflows_test

import (
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
			[]string{"MinAge must be positive, got 0s", "Interval must be positive, got -1s"}},
		{"attempt longer than the budget", with(func(t *workflows.Timing) { t.AttemptTimeout = 11 * time.Second }),
			[]string{"AttemptTimeout 11s exceeds ChargeBudget 10s"}},
		{"no room for a retry", with(func(t *workflows.Timing) { t.RetryInterval = 10 * time.Second }),
			[]string{"RetryInterval 10s must be shorter than ChargeBudget 10s"}},
		{"abandoned while charging", with(func(t *workflows.Timing) { t.AbandonAfter = 10 * time.Second; t.MinAge = time.Second }),
			[]string{"ChargeBudget 10s must be shorter than AbandonAfter 10s"}},
		{"abandoned before the first lookup", with(func(t *workflows.Timing) { t.MinAge = time.Hour }),
			[]string{"MinAge 1h0m0s exceeds AbandonAfter 30m0s"}},
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
		ChargeBudget:   5 * time.Second,
		RetryInterval:  500 * time.Millisecond,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   17*time.Minute + 123*time.Nanosecond,
	}
	b, err := timing.Encode()
	require.NoError(t, err)

	got, err := workflows.DecodeTiming(b)
	require.NoError(t, err)
	require.Equal(t, timing, got)
}

func TestDecodeTiming_RefusesWhatIsNotAWholeValidTiming(t *testing.T) {
	valid, err := workflows.DefaultTiming().Encode()
	require.NoError(t, err)
	tests := []struct {
		name, data, want string
	}{
		{"not JSON", `abandon-after 30m`, "timing: decode: invalid character"},
		{"a field from a newer program", strings.Replace(string(valid), "{", `{"jitter":1,`, 1), `unknown field "jitter"`},
		{"a missing field", `{"attemptTimeout":3000000000,"chargeBudget":10000000000,"retryInterval":1000000000,"minAge":120000000000,"interval":60000000000}`,
			"AbandonAfter must be positive, got 0s"},
		{"inconsistent", strings.Replace(string(valid), `"attemptTimeout":3000000000`, `"attemptTimeout":11000000000`, 1), "AttemptTimeout 11s exceeds ChargeBudget 10s"},
		{"data after the timing", string(valid) + ` {}`, "data after the timing"},
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
		"attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 30m0s",
		workflows.DefaultTiming().String())
}
