package provider_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

func TestIsProviderTrouble(t *testing.T) {
	for _, code := range []string{"issuer_not_available", "processing_error", "reenter_transaction", "try_again_later"} {
		require.True(t, provider.IsProviderTrouble(code), code)
	}
	cards := []string{"do_not_honor", "insufficient_funds", "lost_card", "stolen_card", "generic_decline", "expired_card",
		"card_declined", provider.DeclineInvalidPaymentMethod, provider.DeclineHoldExpired, ""}
	for _, code := range cards {
		require.False(t, provider.IsProviderTrouble(code), code)
	}
}
