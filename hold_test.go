package chargeonce_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestHoldDeadline_IsTheMarginBeforeTheEarlierExpiry(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	// The provider's capture_before wins when it comes first.
	require.Equal(t, at.Add(5*24*time.Hour-time.Hour), chargeonce.HoldDeadline(at, at.Add(5*24*time.Hour), week, time.Hour))
	// The window wins when it ends first, or when the provider told no
	// expiry.
	require.Equal(t, at.Add(week-time.Hour), chargeonce.HoldDeadline(at, at.Add(8*24*time.Hour), week, time.Hour))
	require.Equal(t, at.Add(week-time.Hour), chargeonce.HoldDeadline(at, time.Time{}, week, time.Hour))
}

func TestCaptureAmount_TakesAtMostTheHold(t *testing.T) {
	held := chargeonce.Money{Minor: 10000, Currency: "TRY"}
	for _, tt := range []struct {
		requested int64
		want      int64
		ok        bool
	}{
		{0, 10000, true},
		{2500, 2500, true},
		{10000, 10000, true},
		{10001, 0, false},
		{-1, 0, false},
	} {
		got, ok := chargeonce.CaptureAmount(held, tt.requested)
		require.Equal(t, tt.ok, ok, "capture of %d", tt.requested)
		if ok {
			require.Equal(t, chargeonce.Money{Minor: tt.want, Currency: "TRY"}, got)
		}
	}
}

func TestMoveReference_ParsesBackAndIsNoPaymentsOrRefunds(t *testing.T) {
	key := "01937a4e-8c1b-7def-8123-456789abcdef"
	for _, kind := range []chargeonce.MoveKind{chargeonce.MoveCapture, chargeonce.MoveVoid} {
		ref := chargeonce.MoveReference("shop", kind, key)
		prefix, gotKind, gotKey, err := chargeonce.ParseMoveReference(ref)
		require.NoError(t, err)
		require.Equal(t, []string{"shop", string(kind), key}, []string{prefix, string(gotKind), gotKey})
		_, _, _, err = chargeonce.ParseMerchantReference(ref)
		require.Error(t, err, "a move's reference %q reads as a payment's", ref)
		_, _, err = chargeonce.ParseRefundReference(ref)
		require.Error(t, err, "a move's reference %q reads as a refund's", ref)
	}
	_, _, _, err := chargeonce.ParseMoveReference("shop-refund-01937a4e8c1b7def8123456789abcdef")
	require.Error(t, err)
}

func TestMoveIntent_Validate(t *testing.T) {
	valid := chargeonce.MoveIntent{
		Key: "01937a4e-8c1b-7def-8123-456789abcdef", Kind: chargeonce.MoveCapture, OrderID: 7,
		AttemptKey: "01937a4e-8c1b-7def-8123-456789abcde0", ChargeID: "ch_1", Amount: chargeonce.Money{Minor: 100, Currency: "TRY"},
		MerchantReference: "shop-capture-01937a4e8c1b7def8123456789abcdef", Origin: chargeonce.MoveByMerchant,
		CreatedAt: time.Now(), Provider: "fake",
	}
	require.NoError(t, valid.Validate())
	for name, broken := range map[string]func(*chargeonce.MoveIntent){
		"kind":     func(m *chargeonce.MoveIntent) { m.Kind = "refund" },
		"attempt":  func(m *chargeonce.MoveIntent) { m.AttemptKey = "" },
		"charge":   func(m *chargeonce.MoveIntent) { m.ChargeID = "" },
		"origin":   func(m *chargeonce.MoveIntent) { m.Origin = "operator" },
		"amount":   func(m *chargeonce.MoveIntent) { m.Amount.Minor = 0 },
		"provider": func(m *chargeonce.MoveIntent) { m.Provider = "" },
	} {
		m := valid
		broken(&m)
		require.Error(t, m.Validate(), name)
	}
}
