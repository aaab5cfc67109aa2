package fakeprovider

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMode_Validate(t *testing.T) {
	tests := []struct {
		name string
		mode Mode
		want string
	}{
		{"normal", Mode{Name: ModeNormal}, ""},
		{"slow", Mode{Name: ModeSlow, Delay: time.Second}, ""},
		{"drop holding", Mode{Name: ModeDrop}, ""},
		{"drop with 504", Mode{Name: ModeDrop, Delay: time.Second}, ""},
		{"error", Mode{Name: ModeError, Rate: 0.5, Seed: 1}, ""},
		{"lost response", Mode{Name: ModeLostResponse, Rate: 1}, ""},
		{"rate limit", Mode{Name: ModeRateLimit, Rate: 0.01}, ""},
		{"empty name", Mode{}, `unknown mode "": want normal, slow, drop, error, lost_response or rate_limit`},
		{"negative delay", Mode{Name: ModeDrop, Delay: -time.Second}, "delay must not be negative, got -1s"},
		{"slow without delay", Mode{Name: ModeSlow}, "mode slow needs a delay greater than 0"},
		{"negative rate", Mode{Name: ModeError, Rate: -0.1}, "rate must be between 0 and 1, got -0.1"},
		{"NaN rate", Mode{Name: ModeNormal, Rate: math.NaN()}, "rate must be between 0 and 1, got NaN"},
		{"lost response without rate", Mode{Name: ModeLostResponse}, "mode lost_response needs a rate greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.mode.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero value", Config{}, ""},
		{"one second retention", Config{Retention: time.Second}, ""},
		{"short retention", Config{Retention: time.Millisecond}, "retention must be at least 1s, got 1ms"},
		{"negative retention", Config{Retention: -time.Hour}, "retention must be at least 1s, got -1h0m0s"},
		{"fractional lookup rate", Config{LookupRate: 0.01}, ""},
		{"negative lookup rate", Config{LookupRate: -1}, "lookup rate must be a positive number of lookups a second, got -1"},
		{"lookup rate NaN", Config{LookupRate: math.NaN()}, "lookup rate must be a positive number of lookups a second, got NaN"},
		{"infinite lookup rate", Config{LookupRate: math.Inf(1)}, "lookup rate must be a positive number of lookups a second, got +Inf"},
		{"bad mode", Config{Mode: Mode{Name: ModeError}}, "mode error needs a rate greater than 0"},
		{"rate without a name", Config{Mode: Mode{Rate: 2}}, "rate must be between 0 and 1, got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, newErr := New(tt.cfg)
			if tt.want == "" {
				require.NoError(t, err)
				require.NoError(t, newErr)
				return
			}
			require.EqualError(t, err, tt.want)
			require.EqualError(t, newErr, tt.want)
		})
	}
}

func TestProvider_RetentionDefaultsTo24h(t *testing.T) {
	p, err := New(Config{})
	require.NoError(t, err)
	require.Equal(t, DefaultRetention, p.Retention())
	require.Equal(t, 24*time.Hour, DefaultRetention)
}

func TestProvider_LookupRateDefaultsTo50(t *testing.T) {
	p, err := New(Config{})
	require.NoError(t, err)
	require.Equal(t, float64(DefaultLookupRate), p.LookupRate())
	require.Equal(t, 50, DefaultLookupRate)
}
