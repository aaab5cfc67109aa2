package chargeonce_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

const testKey = "01a1d96c-e23d-77bf-801e-9df969c1d378"

func TestMerchantReference_RoundTrips(t *testing.T) {
	ref := chargeonce.MerchantReference("bookstore", 1001, testKey)
	require.Equal(t, "bookstore-1001-01a1d96ce23d77bf801e9df969c1d378", ref)

	prefix, order, key, err := chargeonce.ParseMerchantReference(ref)
	require.NoError(t, err)
	require.Equal(t, "bookstore", prefix)
	require.Equal(t, int64(1001), order)
	require.Equal(t, testKey, key)
}

func TestParseMerchantReference_RefusesMalformed(t *testing.T) {
	for _, ref := range []string{
		"",
		"bookstore-1001",
		"bookstore-0-01a1d96ce23d77bf801e9df969c1d378",
		"Bookstore-1001-01a1d96ce23d77bf801e9df969c1d378",
		"bookstore-1001-01a1d96ce23d77bf801e9df969c1d37",
		"bookstore-1001-01A1D96CE23D77BF801E9DF969C1D378",
		"bookstore-99999999999999999999-01a1d96ce23d77bf801e9df969c1d378",
	} {
		_, _, _, err := chargeonce.ParseMerchantReference(ref)
		require.Error(t, err, ref)
	}
}

func TestValidReferencePrefix(t *testing.T) {
	require.True(t, chargeonce.ValidReferencePrefix("bookstore"))
	require.True(t, chargeonce.ValidReferencePrefix("shop_2"))
	for _, p := range []string{"", "2shop", "Shop", "book-store", "shop "} {
		require.False(t, chargeonce.ValidReferencePrefix(p), p)
	}
}

func TestPaymentIntent_Validate(t *testing.T) {
	valid := chargeonce.PaymentIntent{
		Key:               testKey,
		OrderID:           1001,
		Amount:            chargeonce.Money{Minor: 54890, Currency: "TRY"},
		CardToken:         "tok_visa",
		CardHash:          chargeonce.LegacyCardHash("tok_visa"),
		MerchantReference: chargeonce.MerchantReference("bookstore", 1001, testKey),
		CreatedAt:         time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
	}
	require.NoError(t, valid.Validate())

	withoutToken := valid
	withoutToken.CardToken = ""
	require.NoError(t, withoutToken.Validate(), "an intent started by the outbox sweep has only the card hash")

	held := valid
	held.Capture, held.OnDeadline = chargeonce.CaptureManual, chargeonce.DeadlineCapture
	require.NoError(t, held.Validate())

	tests := map[string]func(p *chargeonce.PaymentIntent){
		"key not a UUID":        func(p *chargeonce.PaymentIntent) { p.Key = "order-1001" },
		"upper-case key":        func(p *chargeonce.PaymentIntent) { p.Key = strings.ToUpper(testKey) },
		"order not positive":    func(p *chargeonce.PaymentIntent) { p.OrderID = 0 },
		"token of another card": func(p *chargeonce.PaymentIntent) { p.CardToken = "tok_mastercard" },
		"hash missing":          func(p *chargeonce.PaymentIntent) { p.CardHash = "" },
		"reference missing":     func(p *chargeonce.PaymentIntent) { p.MerchantReference = "" },
		"creation time missing": func(p *chargeonce.PaymentIntent) { p.CreatedAt = time.Time{} },
		"amount not positive":   func(p *chargeonce.PaymentIntent) { p.Amount.Minor = -1 },
		"currency unknown":      func(p *chargeonce.PaymentIntent) { p.Amount.Currency = "ZZZ" },
		"capture mode unknown":  func(p *chargeonce.PaymentIntent) { p.Capture = "later" },
		"deadline action unknown": func(p *chargeonce.PaymentIntent) {
			p.Capture, p.OnDeadline = chargeonce.CaptureManual, "refund"
		},
		"deadline action of an automatic capture": func(p *chargeonce.PaymentIntent) { p.OnDeadline = chargeonce.DeadlineCapture },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			p := valid
			mutate(&p)
			require.Error(t, p.Validate())
		})
	}
}

func testHasher(t testing.TB, key byte) chargeonce.CardHasher {
	t.Helper()
	h, err := chargeonce.ParseCardHashKey(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{key}, chargeonce.CardHashKeySize)))
	require.NoError(t, err)
	return h
}

// A keyed hash tells cards apart, but without the key it cannot be
// computed, so trying tokens does not reverse it: another key gives another
// hash, and none is the token's plain SHA-256.
func TestCardHasher_IsKeyedAndTellsCardsApart(t *testing.T) {
	h := testHasher(t, 1)
	visa := h.Hash("tok_visa")
	require.Len(t, visa, 64)
	require.Equal(t, visa, h.Hash("tok_visa"))
	require.NotEqual(t, visa, h.Hash("tok_mastercard"))
	require.NotEqual(t, visa, testHasher(t, 2).Hash("tok_visa"), "another key, another hash")
	require.NotEqual(t, visa, chargeonce.LegacyCardHash("tok_visa"))
	require.NotContains(t, visa, "tok_visa")

	// A hash stored before hashes were keyed re-keys to the same hash, with
	// no token at hand.
	rekeyed, err := h.Rekey(chargeonce.LegacyCardHash("tok_visa"))
	require.NoError(t, err)
	require.Equal(t, visa, rekeyed)
	_, err = h.Rekey("tok_visa")
	require.ErrorContains(t, err, "is not a hex SHA-256")
}

func TestParseCardHashKey_RefusesKeysThatAreNot32Bytes(t *testing.T) {
	_, err := chargeonce.ParseCardHashKey(base64.StdEncoding.EncodeToString(make([]byte, 16)))
	require.ErrorContains(t, err, "16 bytes, want 32")
	_, err = chargeonce.ParseCardHashKey("not base64!")
	require.ErrorContains(t, err, "not standard base64")
	require.False(t, chargeonce.CardHasher{}.Valid())
	_, err = chargeonce.ParseCardHashKey(chargeonce.NewCardHashKey())
	require.NoError(t, err)
}

// An intent with a keyed hash cannot be checked against its token without
// the key; one with a legacy hash still is.
func TestPaymentIntent_ValidateChecksOnlyALegacyHashAgainstTheToken(t *testing.T) {
	p := chargeonce.PaymentIntent{
		Key: testKey, OrderID: 1001, Amount: chargeonce.Money{Minor: 100, Currency: "EUR"},
		CardToken: "tok_visa", CardHash: chargeonce.LegacyCardHash("tok_mastercard"),
		MerchantReference: "shop-1001-x", CreatedAt: time.Now(),
	}
	require.ErrorContains(t, p.Validate(), "card token does not match the card hash")
	p.CardHash, p.CardHashKeyed = testHasher(t, 1).Hash("tok_visa"), true
	require.NoError(t, p.Validate())
}

func TestOrderStatusAfter(t *testing.T) {
	tests := []struct {
		attempt  chargeonce.AttemptStatus
		order    chargeonce.OrderStatus
		terminal bool
	}{
		{chargeonce.AttemptOpen, chargeonce.OrderPaymentPending, false},
		{chargeonce.AttemptSucceeded, chargeonce.OrderPaid, true},
		{chargeonce.AttemptDeclined, chargeonce.OrderPlaced, true},
		{chargeonce.AttemptAbandoned, chargeonce.OrderPlaced, true},
		{chargeonce.AttemptNotProcessed, chargeonce.OrderPlaced, true},
		{chargeonce.AttemptFailed, chargeonce.OrderPaymentPending, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.attempt), func(t *testing.T) {
			require.Equal(t, tt.order, chargeonce.OrderStatusAfter(tt.attempt))
			require.Equal(t, tt.terminal, tt.attempt.Terminal())
			require.True(t, tt.attempt.Valid())
		})
	}
	require.False(t, chargeonce.AttemptStatus("paid").Valid())
}

// Every checkout hashes the card token and builds a merchant reference, and
// every lookup parses one back.

func BenchmarkCardHasher(b *testing.B) {
	h := testHasher(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if h := h.Hash("tok_visa"); len(h) != 64 {
			b.Fatalf("hash %q", h)
		}
	}
}

func BenchmarkMerchantReference(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if ref := chargeonce.MerchantReference("chargeonce", 548, "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1a2b"); ref == "" {
			b.Fatal("empty reference")
		}
	}
}

func BenchmarkParseMerchantReference(b *testing.B) {
	ref := chargeonce.MerchantReference("chargeonce", 548, "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1a2b")
	b.ReportAllocs()
	for b.Loop() {
		if _, id, _, err := chargeonce.ParseMerchantReference(ref); err != nil || id != 548 {
			b.Fatalf("order %d, error %v", id, err)
		}
	}
}

func BenchmarkValidKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !chargeonce.ValidKey("0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1a2b") {
			b.Fatal("valid key refused")
		}
	}
}
