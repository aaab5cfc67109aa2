package chargeonce_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
)

func TestParseMoney_ExactMinorUnits(t *testing.T) {
	tests := []struct {
		amount, currency string
		minor            int64
		decimal          string
	}{
		{"548.90", "TRY", 54890, "548.90"},
		{"0.01", "TRY", 1, "0.01"},
		{"0.50", "TRY", 50, "0.50"},
		{"1000", "JPY", 1000, "1000"},
		{"12.345", "KWD", 12345, "12.345"},
		{"0.001", "BHD", 1, "0.001"},
		{"999999.99", "USD", 99_999_999, "999999.99"},
		{"99999999", "JPY", 99_999_999, "99999999"},
		{"99999.999", "KWD", 99_999_999, "99999.999"},
	}
	for _, tt := range tests {
		t.Run(tt.amount+" "+tt.currency, func(t *testing.T) {
			m, err := chargeonce.ParseMoney(tt.amount, tt.currency)
			require.NoError(t, err)
			require.Equal(t, chargeonce.Money{Minor: tt.minor, Currency: tt.currency}, m)
			require.Equal(t, tt.decimal, m.Decimal())
		})
	}
}

func TestParseMoney_RefusesInexactOrMalformedAmounts(t *testing.T) {
	tests := []struct {
		name, amount, currency string
		want                   error
	}{
		{"too many decimals", "1.2345", "TRY", chargeonce.ErrInvalidAmount},
		{"decimals on a currency without minor units", "1000.5", "JPY", chargeonce.ErrInvalidAmount},
		{"zero", "0.00", "TRY", chargeonce.ErrInvalidAmount},
		{"negative", "-5.00", "TRY", chargeonce.ErrInvalidAmount},
		{"explicit plus", "+5.00", "TRY", chargeonce.ErrInvalidAmount},
		{"empty", "", "TRY", chargeonce.ErrInvalidAmount},
		{"point only", ".", "TRY", chargeonce.ErrInvalidAmount},
		{"no whole part", ".50", "TRY", chargeonce.ErrInvalidAmount},
		{"trailing point", "5.", "TRY", chargeonce.ErrInvalidAmount},
		{"exponent", "1e3", "TRY", chargeonce.ErrInvalidAmount},
		{"thousands separator", "1,000.00", "TRY", chargeonce.ErrInvalidAmount},
		{"comma decimal", "548,90", "TRY", chargeonce.ErrInvalidAmount},
		{"spaces", " 5.00", "TRY", chargeonce.ErrInvalidAmount},
		{"two points", "1.2.3", "TRY", chargeonce.ErrInvalidAmount},
		{"overflow", "92233720368547758.08", "USD", chargeonce.ErrInvalidAmount},
		{"int64 maximum", "92233720368547758.07", "USD", chargeonce.ErrInvalidAmount},
		{"one minor unit over the maximum", "1000000.00", "USD", chargeonce.ErrInvalidAmount},
		{"over the maximum without minor units", "100000000", "JPY", chargeonce.ErrInvalidAmount},
		{"leading zeros", "0001.00", "TRY", chargeonce.ErrInvalidAmount},
		{"leading zero", "07.50", "USD", chargeonce.ErrInvalidAmount},
		{"fewer decimals", "548.9", "TRY", chargeonce.ErrInvalidAmount},
		{"no decimals", "548", "TRY", chargeonce.ErrInvalidAmount},
		{"a point with no minor units", "1000.", "JPY", chargeonce.ErrInvalidAmount},
		{"huge", "99999999999999999999999999", "JPY", chargeonce.ErrInvalidAmount},
		{"unknown currency", "5.00", "ZZZ", chargeonce.ErrInvalidCurrency},
		{"lower-case currency", "5.00", "try", chargeonce.ErrInvalidCurrency},
		{"no currency", "5.00", "XXX", chargeonce.ErrInvalidCurrency},
		{"gold", "5.00", "XAU", chargeonce.ErrInvalidCurrency},
		{"long code", "5.00", "TRYY", chargeonce.ErrInvalidCurrency},
		{"empty currency", "5.00", "", chargeonce.ErrInvalidCurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chargeonce.ParseMoney(tt.amount, tt.currency)
			require.Error(t, err)
			require.True(t, errors.Is(err, tt.want), "error %q should wrap %q", err, tt.want)
		})
	}
}

func TestParseAmount_SignedAndZero(t *testing.T) {
	tests := []struct {
		amount, currency string
		want             int64
	}{
		{"548.90", "TRY", 54890},
		{"0.00", "TRY", 0},
		{"-12.5", "TRY", -1250},
		{"-1000", "JPY", -1000},
		{"0.001", "KWD", 1},
	}
	for _, tt := range tests {
		t.Run(tt.amount+" "+tt.currency, func(t *testing.T) {
			got, err := chargeonce.ParseAmount(tt.amount, tt.currency)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{"--1.00", "-", "+1.00", "-1.234", "1,00", "- 1.00"} {
		_, err := chargeonce.ParseAmount(bad, "TRY")
		require.ErrorIs(t, err, chargeonce.ErrInvalidAmount, bad)
	}
}

func TestCurrencyDigits_FollowISO4217(t *testing.T) {
	for code, digits := range map[string]int{"TRY": 2, "USD": 2, "EUR": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3, "XOF": 0} {
		got, err := chargeonce.CurrencyDigits(code)
		require.NoError(t, err, code)
		require.Equal(t, digits, got, code)
	}
}

func TestParseMoney_NamesTheOneFormAndTheMaximum(t *testing.T) {
	_, err := chargeonce.ParseMoney("0001.00", "TRY")
	require.EqualError(t, err, `invalid amount: "0001.00" must be written "1.00": no leading zeros, and exactly the decimals of TRY`)
	_, err = chargeonce.ParseMoney("1000000.00", "TRY")
	require.EqualError(t, err, "invalid amount: 1000000.00 TRY is over the largest amount, 999999.99 TRY")
}

func TestAddMinor_RefusesToWrap(t *testing.T) {
	sum, err := chargeonce.AddMinor(math.MaxInt64-1, 1)
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), sum)
	sum, err = chargeonce.AddMinor(math.MinInt64+1, -1)
	require.NoError(t, err)
	require.Equal(t, int64(math.MinInt64), sum)
	sum, err = chargeonce.AddMinor(math.MaxInt64, math.MinInt64)
	require.NoError(t, err)
	require.Equal(t, int64(-1), sum)
	for _, pair := range [][2]int64{{math.MaxInt64, 1}, {1, math.MaxInt64}, {math.MinInt64, -1}, {math.MaxInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64}} {
		_, err := chargeonce.AddMinor(pair[0], pair[1])
		require.ErrorIs(t, err, chargeonce.ErrOverflow, "%d + %d", pair[0], pair[1])
	}
}

func TestNewMoney_RefusesWhatIsNotAnAmountButReadsOneOverTheMaximum(t *testing.T) {
	_, err := chargeonce.NewMoney(0, "TRY")
	require.ErrorIs(t, err, chargeonce.ErrInvalidAmount)
	// An order stored before the maximum existed still reads; only new
	// input is held to it.
	over, err := chargeonce.NewMoney(chargeonce.DefaultMaxMinor+1, "TRY")
	require.NoError(t, err)
	_, err = chargeonce.ParseMoney(over.Decimal(), "TRY")
	require.ErrorIs(t, err, chargeonce.ErrInvalidAmount)
	_, err = chargeonce.NewMoney(100, "ZZZ")
	require.ErrorIs(t, err, chargeonce.ErrInvalidCurrency)
	m, err := chargeonce.NewMoney(54890, "TRY")
	require.NoError(t, err)
	require.Equal(t, "548.90 TRY", m.String())
}

func FuzzParseMoney_RoundTrips(f *testing.F) {
	for _, seed := range [][2]string{
		{"548.90", "TRY"}, {"1000", "JPY"}, {"1.2345", "TRY"}, {"12.345", "KWD"},
		{"-1", "USD"}, {"", ""}, {"9999999999999999999", "JPY"}, {"0.1", "XXX"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, amount, code string) {
		m, err := chargeonce.ParseMoney(amount, code)
		if err != nil {
			return
		}
		if m.Minor <= 0 {
			t.Fatalf("ParseMoney(%q, %q) accepted a non-positive amount %d", amount, code, m.Minor)
		}
		if m.Minor > chargeonce.MaxMinor(code) {
			t.Fatalf("ParseMoney(%q, %q) accepted %d, over the maximum", amount, code, m.Minor)
		}
		// An amount has one form: the one Decimal writes.
		if m.Decimal() != amount {
			t.Fatalf("ParseMoney(%q, %q) accepted a form other than its Decimal %q", amount, code, m.Decimal())
		}
	})
}

func BenchmarkParseMoney(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chargeonce.ParseMoney("548.90", "TRY"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMoneyDecimal(b *testing.B) {
	m := chargeonce.Money{Minor: 54890, Currency: "TRY"}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Decimal()
	}
}
