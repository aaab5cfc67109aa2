package provider_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestExchange_Class(t *testing.T) {
	const (
		approved     = provider.ClassApproved
		declined     = provider.ClassDeclined
		notProcessed = provider.ClassNotProcessed
		unknown      = provider.ClassUnknown
		ourBug       = provider.ClassOurBug
	)
	// Each row gives the class of the outcome for a request that was not
	// sent, one that was sent and may have been processed, and one that the
	// provider refused before processing.
	cases := []struct {
		outcome                provider.Outcome
		notSent, sent, refused provider.Class
	}{
		{provider.Approved, approved, approved, approved},
		{provider.Declined, declined, declined, declined},
		{provider.InFlight, notProcessed, unknown, notProcessed},
		{provider.RateLimited, notProcessed, unknown, notProcessed},
		{provider.Unavailable, notProcessed, unknown, notProcessed},
		{provider.TransportError, notProcessed, unknown, notProcessed},
		{provider.Timeout, notProcessed, unknown, notProcessed},
		{provider.BreakerOpen, notProcessed, unknown, notProcessed},
		{provider.ContractViolation, ourBug, ourBug, ourBug},
		{provider.InvalidRequest, ourBug, ourBug, ourBug},
		{provider.NotFound, ourBug, ourBug, ourBug},
		{"", ourBug, ourBug, ourBug},
		{"teapot", ourBug, ourBug, ourBug},
	}
	for _, tc := range cases {
		for _, v := range []struct {
			name          string
			sent, refused bool
			want          provider.Class
		}{
			{"not sent", false, false, tc.notSent},
			{"not sent, refused", false, true, tc.notSent},
			{"sent", true, false, tc.sent},
			{"sent, refused", true, true, tc.refused},
		} {
			ex := provider.Exchange{Outcome: tc.outcome, Sent: v.sent, Refused: v.refused, StatusCode: 503, Detail: "x"}
			require.Equal(t, v.want, ex.Class(), "%q, %s", tc.outcome, v.name)
			// The class of a result is its exchange's, through embedding.
			require.Equal(t, v.want, provider.Result{Exchange: ex}.Class(), "%q, %s: charge", tc.outcome, v.name)
			require.Equal(t, v.want, provider.RefundResult{Exchange: ex}.Class(), "%q, %s: refund", tc.outcome, v.name)
		}
	}
}

func TestExchange_NotProcessed(t *testing.T) {
	require.True(t, provider.Exchange{Outcome: provider.Timeout}.NotProcessed(), "nothing sent")
	require.True(t, provider.Exchange{Outcome: provider.RateLimited, Sent: true, Refused: true}.NotProcessed(), "refused")
	require.False(t, provider.Exchange{Outcome: provider.Timeout, Sent: true}.NotProcessed(), "sent, no answer")
}
