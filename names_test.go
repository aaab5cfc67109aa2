package chargeonce_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestLookupTaskQueueOf_KeepsTheSharedQueueForTheUnnamedAndTheDefaultProvider(t *testing.T) {
	tests := []struct {
		provider, queue string
	}{
		{"", "chargeonce-lookups"},
		{chargeonce.DefaultProvider, "chargeonce-lookups"},
		{"eu", "chargeonce-lookups-eu"},
		{"stripe_us-2", "chargeonce-lookups-stripe_us-2"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			require.Equal(t, tt.queue, chargeonce.LookupTaskQueueOf(tt.provider))
		})
	}
}
