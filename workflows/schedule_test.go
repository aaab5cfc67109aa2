package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTiming_NextLookupFollowsTheJitteredBackoffGridAndEndsAtTheDeadline(t *testing.T) {
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	timing := Timing{MinAge: 2 * time.Minute, Interval: time.Minute, AbandonAfter: 30 * time.Minute}
	const jitter = 17 * time.Second
	first := 2*time.Minute + jitter
	at := func(d time.Duration) time.Time { return created.Add(d) }
	tests := []struct {
		name   string
		now    time.Duration
		checks int
		want   time.Duration
	}{
		{"first lookup waits for MinAge and the jitter", 10 * time.Second, 0, first},
		{"first lookup overdue is due at once", 3 * time.Minute, 0, first},
		{"an early lookup keeps the first slot", 30 * time.Second, 1, first},
		{"one Interval after the first", first, 1, first + time.Minute},
		{"a slow lookup does not shift the grid", first + 5*time.Second, 1, first + time.Minute},
		{"then two Intervals", first + time.Minute, 2, first + 3*time.Minute},
		{"then four", first + 3*time.Minute, 3, first + 7*time.Minute},
		{"then eight", first + 7*time.Minute, 4, first + 15*time.Minute},
		{"and eight from then on", first + 15*time.Minute, 5, first + 23*time.Minute},
		{"a lookup between grid times waits for the next", first + 16*time.Minute, 6, first + 23*time.Minute},
		{"the grid time past the deadline gives way to it", first + 23*time.Minute, 6, 30 * time.Minute},
		{"unanswered at the deadline: ask again an interval later", 30 * time.Minute, 7, 31 * time.Minute},
		{"and an interval after that", 31*time.Minute + 2*time.Second, 8, 32*time.Minute + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, at(tt.want), timing.nextLookupAt(jitter, created, at(tt.now), tt.checks))
		})
	}
}

func TestTiming_NextLookupOnTheDeadlineIsTheDeadline(t *testing.T) {
	created := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	// The grid 2m, 3m, 5m, 9m falls on the deadline exactly.
	timing := Timing{MinAge: 2 * time.Minute, Interval: time.Minute, AbandonAfter: 9 * time.Minute}

	require.Equal(t, created.Add(9*time.Minute), timing.nextLookupAt(0, created, created.Add(5*time.Minute), 3))
	require.Equal(t, created.Add(10*time.Minute), timing.nextLookupAt(0, created, created.Add(9*time.Minute), 4),
		"no second lookup at the deadline: after it, one Interval later")
}
