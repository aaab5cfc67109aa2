package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRun_DuringOutageCoversExchangesThatOverlapAnOutage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// The first outage is over (its end includes the grace); the second
	// still lasts.
	r := &run{outages: []outage{{begin: at(10), end: at(20)}, {begin: at(100)}}}
	for _, tc := range []struct {
		name           string
		sent, answered int
		want           bool
	}{
		{"answered before the outage", 1, 9, false},
		{"sent before, answered during", 5, 12, true},
		{"within the outage", 12, 15, true},
		{"sent during the grace", 19, 25, true},
		{"sent after the outage", 20, 21, false},
		{"between outages", 50, 60, false},
		{"answered during an outage that lasts", 99, 150, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, r.duringOutage(at(tc.sent), at(tc.answered)))
		})
	}
}
