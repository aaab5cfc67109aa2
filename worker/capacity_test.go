package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/syncbuf"
	"chargeonce/workflows"
)

// openCount is a store that reports open attempts and nothing else.
type openCount struct {
	open int
	err  error
}

func (o *openCount) OpenAttemptStats(context.Context) (int, time.Time, error) {
	return o.open, time.Time{}, o.err
}

func TestCapacityWatch_WarnsOnceWhenTheDemandPassesTheRateAndSaysWhenItIsBack(t *testing.T) {
	stats := &openCount{open: 100}
	logs := &syncbuf.Buffer{}
	c := newCapacityWatch(stats, workflows.DefaultTiming(), 1, slog.New(slog.NewTextHandler(logs, nil)))
	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }

	c.check(context.Background())
	require.Empty(t, logs.String(), "100 open attempts ask for 0.39 lookups a second")

	stats.open = 300
	c.check(context.Background())
	c.check(context.Background())
	require.Len(t, lines(), 1, "one warning, not one per check")
	require.Contains(t, lines()[0], "level=WARN")
	require.Contains(t, lines()[0], "open_attempts=300 lookups_per_second=1.1666666666666667 allowed_per_second=1 max_open_attempts=257")

	stats.open = 200
	c.check(context.Background())
	c.check(context.Background())
	require.Len(t, lines(), 2)
	require.Contains(t, lines()[1], `level=INFO msg="the lookups of the open attempts are within the provider's rate again" open_attempts=200`)
}

func TestCapacityWatch_AStoreThatFailsIsLoggedUnlessTheWatchStops(t *testing.T) {
	stats := &openCount{err: errors.New("database is away")}
	logs := &syncbuf.Buffer{}
	c := newCapacityWatch(stats, workflows.DefaultTiming(), 50, slog.New(slog.NewTextHandler(logs, nil)))

	c.check(context.Background())
	require.Contains(t, logs.String(), `level=WARN msg="lookup capacity not checked: the open attempts could not be counted" error="database is away"`)

	before := logs.String()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	c.check(stopped)
	require.Equal(t, before, logs.String(), "nothing more is logged")
}
