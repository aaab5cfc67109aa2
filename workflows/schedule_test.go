package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTiming_NextCheckFollowsTheGridAndEndsAtTheDeadline(t *testing.T) {
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	timing := Timing{MinAge: 2 * time.Minute, Interval: 50 * time.Second, AbandonAfter: 5 * time.Minute}
	at := func(d time.Duration) time.Time { return created.Add(d) }
	tests := []struct {
		name   string
		now    time.Duration
		checks int
		want   time.Duration
	}{
		{"first lookup waits for MinAge", 10 * time.Second, 0, 2 * time.Minute},
		{"first lookup overdue is due at once", 3 * time.Minute, 0, 2 * time.Minute},
		{"an early lookup keeps the first slot", 30 * time.Second, 1, 2 * time.Minute},
		{"next grid slot", 2 * time.Minute, 1, 2*time.Minute + 50*time.Second},
		{"a slow lookup does not shift the grid", 2*time.Minute + 5*time.Second, 1, 2*time.Minute + 50*time.Second},
		{"the last slot is the deadline", 4*time.Minute + 40*time.Second, 4, 5 * time.Minute},
		{"unanswered at the deadline: ask again an interval later", 5 * time.Minute, 5, 5*time.Minute + 50*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, at(tt.want), timing.nextCheckAt(created, at(tt.now), tt.checks))
		})
	}
}
