package chargeonce_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestPlural_AgreesWithTheCount(t *testing.T) {
	require.Equal(t, "0 exceptions", chargeonce.Plural(0, "exception"))
	require.Equal(t, "1 exception", chargeonce.Plural(1, "exception"))
	require.Equal(t, "2 decimals", chargeonce.Plural(2, "decimal"))
}
