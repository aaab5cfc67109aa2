package notify

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// DefaultSchedule is how long a delivery waits after each failed try
// before the next: eleven retries over about 32 hours, so that an endpoint
// down for a day still gets every event. After the last, it is given up.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// MaxScheduleSteps bounds the retries of a schedule.
const MaxScheduleSteps = 30

// jitterFraction is the most that a wait grows at random, so that the
// retries of many events that failed together do not arrive together.
const jitterFraction = 0.1

// FormatSchedule writes a schedule as ParseSchedule reads it.
func FormatSchedule(schedule []time.Duration) string {
	parts := make([]string, len(schedule))
	for i, d := range schedule {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

// ParseSchedule reads a retry schedule: a comma-separated list of Go
// durations ("5s,30s,2m"), checked by ValidateSchedule.
func ParseSchedule(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("the retry schedule is empty; give at least one wait, as in 5s,30s,2m")
	}
	var schedule []time.Duration
	for i, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("retry %d, %q, is not a duration such as 30s or 2m", i+1, strings.TrimSpace(part))
		}
		schedule = append(schedule, d)
	}
	return schedule, ValidateSchedule(schedule)
}

// ValidateSchedule checks a retry schedule: 1 to MaxScheduleSteps waits,
// each positive and none shorter than the one before.
func ValidateSchedule(schedule []time.Duration) error {
	switch {
	case len(schedule) == 0:
		return errors.New("the retry schedule is empty; give at least one wait, as in 5s,30s,2m")
	case len(schedule) > MaxScheduleSteps:
		return fmt.Errorf("the retry schedule has %d retries; at most %d are allowed", len(schedule), MaxScheduleSteps)
	}
	for i, d := range schedule {
		switch {
		case d <= 0:
			return fmt.Errorf("retry %d waits %v; each wait must be positive", i+1, d)
		case i > 0 && d < schedule[i-1]:
			return fmt.Errorf("retry %d waits %v, less than retry %d's %v; waits never shrink", i+1, d, i, schedule[i-1])
		}
	}
	return nil
}

// wait is how long a delivery waits after its failed tries since it was
// queued: the schedule's step, grown by up to jitterFraction; false when
// the schedule ran out.
func wait(schedule []time.Duration, failed int) (time.Duration, bool) {
	if failed >= len(schedule) {
		return 0, false
	}
	d := schedule[failed]
	return d + time.Duration(rand.Float64()*jitterFraction*float64(d)), true
}
