package activities

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"chargeonce/provider"
)

// The error types of the exchanges that bring no result are what workflow
// histories record, so they are spelled out here rather than named: a
// charge and a refund map to the same ones.
func TestExchangeError(t *testing.T) {
	cases := []struct {
		name      string
		ex        provider.Exchange
		errType   string
		retryable bool
	}{
		{"breaker open", provider.Exchange{Outcome: provider.BreakerOpen}, "ChargeNotProcessed", true},
		{"connection refused", provider.Exchange{Outcome: provider.TransportError}, "ChargeNotProcessed", true},
		{"429", provider.Exchange{Outcome: provider.RateLimited, Sent: true, Refused: true}, "ChargeNotProcessed", true},
		{"503", provider.Exchange{Outcome: provider.Unavailable, Sent: true, Refused: true}, "ChargeNotProcessed", true},
		{"502", provider.Exchange{Outcome: provider.Unavailable, Sent: true}, "ProviderUnavailable", true},
		{"409", provider.Exchange{Outcome: provider.InFlight, Sent: true}, "InFlight", true},
		{"429 that may have been processed", provider.Exchange{Outcome: provider.RateLimited, Sent: true}, "RateLimited", true},
		{"connection lost", provider.Exchange{Outcome: provider.TransportError, Sent: true}, "ProviderTransportError", true},
		{"timeout", provider.Exchange{Outcome: provider.Timeout, Sent: true}, "ProviderTimeout", true},
		{"breaker open, sent", provider.Exchange{Outcome: provider.BreakerOpen, Sent: true}, "ProviderBreakerOpen", true},
		{"invalid, not sent", provider.Exchange{Outcome: provider.InvalidRequest}, "InvalidRequest", false},
		{"400", provider.Exchange{Outcome: provider.InvalidRequest, Sent: true, Refused: true}, "InvalidRequest", false},
		{"422", provider.Exchange{Outcome: provider.ContractViolation, Sent: true}, "ContractViolation", false},
		{"404", provider.Exchange{Outcome: provider.NotFound, Sent: true}, "ContractViolation", false},
		{"no outcome", provider.Exchange{Sent: true}, "ContractViolation", false},
	}
	for _, tc := range cases {
		tc.ex.RetryAfter = 2 * time.Second
		err := exchangeError(tc.ex, "msg")
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), tc.name)
		require.Equal(t, tc.errType, appErr.Type(), tc.name)
		require.Equal(t, !tc.retryable, appErr.NonRetryable(), tc.name)
		require.Equal(t, 2*time.Second, appErr.NextRetryDelay(), tc.name)
	}
}
