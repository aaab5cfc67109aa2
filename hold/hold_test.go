package hold

import (
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestFingerprint_TellsKindOrderAndAmountApart(t *testing.T) {
	amount, other := "12.50", "12.5"
	base := Request{Kind: chargeonce.MoveCapture, OrderID: 1001, Amount: &amount, RequestKey: "k"}
	same := base
	same.RequestKey = "another key"
	require.Equal(t, base.Fingerprint(), same.Fingerprint(), "the key is not part of the body")
	for name, r := range map[string]Request{
		"a void":           {Kind: chargeonce.MoveVoid, OrderID: 1001},
		"another order":    {Kind: chargeonce.MoveCapture, OrderID: 1002, Amount: &amount},
		"the whole hold":   {Kind: chargeonce.MoveCapture, OrderID: 1001},
		"another spelling": {Kind: chargeonce.MoveCapture, OrderID: 1001, Amount: &other},
	} {
		require.NotEqual(t, base.Fingerprint(), r.Fingerprint(), name)
	}
	require.Regexp(t, `^[0-9a-f]{64}$`, base.Fingerprint())
}
