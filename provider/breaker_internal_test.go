package provider

import (
	"math"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
	"github.com/stretchr/testify/require"
)

func TestBreakerConfig_ZeroValueDefaults(t *testing.T) {
	st, err := BreakerConfig{}.settings()

	require.NoError(t, err)
	require.EqualValues(t, 1, st.MaxRequests, "one probe in half-open")
	require.Equal(t, 10*time.Second, st.Timeout)
	require.Equal(t, time.Minute, st.Interval)
	require.False(t, st.ReadyToTrip(gobreaker.Counts{Requests: 4, TotalFailures: 4, ConsecutiveFailures: 4}))
	require.True(t, st.ReadyToTrip(gobreaker.Counts{Requests: 5, TotalFailures: 5, ConsecutiveFailures: 5}))
	require.False(t, st.ReadyToTrip(gobreaker.Counts{Requests: 100, TotalSuccesses: 10, TotalFailures: 90, ConsecutiveFailures: 4}),
		"the ratio rule is off by default")
}

func TestBreakerConfig_RefusesBadSettings(t *testing.T) {
	cases := []struct {
		name string
		cfg  BreakerConfig
		want string
	}{
		{"ratio above one", BreakerConfig{FailureRatio: 1.5}, "FailureRatio 1.5 is not in [0, 1]"},
		{"negative ratio", BreakerConfig{FailureRatio: -0.1}, "FailureRatio -0.1"},
		{"NaN ratio", BreakerConfig{FailureRatio: math.NaN()}, "FailureRatio NaN"},
		{"tiny window", BreakerConfig{Window: time.Millisecond}, "at least 10ms"},
		{"negative window", BreakerConfig{Window: -time.Second}, "at least 10ms"},
		{"negative open timeout", BreakerConfig{OpenTimeout: -time.Second}, "OpenTimeout -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBreaker(nopPort{}, tc.cfg, nil)

			require.ErrorContains(t, err, tc.want)
			require.Nil(t, b)
		})
	}
}

// nopPort is a Port that is never called.
type nopPort struct{ Port }
