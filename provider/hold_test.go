package provider_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestCheckChargeID(t *testing.T) {
	for _, id := range []string{"ch_000001", "pi_3MtwBwLkdIwHu7ix28a3tqPa", "a-b_C9", strings.Repeat("x", 255)} {
		require.NoError(t, provider.CheckChargeID(id), id)
	}
	for _, id := range []string{"", strings.Repeat("x", 256), "ch_1/refund", "ch 1", "ch_1?x=1", "../v1", "ch_1%2F", "ché"} {
		require.Error(t, provider.CheckChargeID(id), id)
	}
}

func TestHoldDecline(t *testing.T) {
	cases := []struct {
		status string
		held   bool
		want   string
	}{
		{provider.StatusAuthorized, true, ""},
		{provider.StatusVoided, true, provider.DeclineHoldVoided},
		{provider.StatusExpired, true, provider.DeclineHoldExpired},
		{provider.StatusSucceeded, true, provider.DeclineHoldCaptured},
		{provider.StatusSucceeded, false, provider.DeclineNotAHold},
		{provider.StatusFailed, false, provider.DeclineNotAHold},
		{provider.StatusFailed, true, provider.DeclineNotAHold},
	}
	for _, tc := range cases {
		got := provider.HoldDecline(tc.status, tc.held)
		require.Equal(t, tc.want, got, "%s held=%v", tc.status, tc.held)
		require.True(t, got == "" || provider.IsHoldDecline(got))
	}
	require.True(t, provider.IsHoldDecline(provider.DeclineAmountTooLarge))
	require.False(t, provider.IsHoldDecline("do_not_honor"))
}
