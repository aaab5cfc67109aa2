package workflows_test

import (
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
