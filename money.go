package chargeonce

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// Money is an exact amount: an integer count of the currency's minor units
// (kuruş for TRY, yen for JPY, fils for KWD). Floats never hold money.
type Money struct {
	// Minor is the amount in minor units; 548.90 TRY is 54890.
	Minor int64 `json:"minor"`
	// Currency is the ISO 4217 code in upper case, such as "TRY".
	Currency string `json:"currency"`
}

// ErrInvalidAmount is wrapped by every error of ParseMoney about the amount
// itself (as opposed to the currency).
var ErrInvalidAmount = errors.New("invalid amount")

// ErrInvalidCurrency is wrapped by every error about a currency code.
var ErrInvalidCurrency = errors.New("invalid currency")

// notLegalTender lists the ISO 4217 units that are codes for metals, bond
// markets, testing or "no currency". They are valid ISO codes, but no card is
// ever charged in them.
var notLegalTender = map[string]bool{
	"XAG": true, "XAU": true, "XPD": true, "XPT": true,
	"XBA": true, "XBB": true, "XBC": true, "XBD": true,
	"XDR": true, "XSU": true, "XUA": true, "XTS": true, "XXX": true,
}

// CurrencyDigits returns how many decimal digits the currency's minor unit
// has: 2 for TRY, 0 for JPY, 3 for KWD. The code must be an upper-case ISO
// 4217 code of a currency that cards are charged in.
func CurrencyDigits(code string) (int, error) {
	if len(code) != 3 || strings.ToUpper(code) != code {
		return 0, fmt.Errorf("%w: %q is not a three-letter upper-case ISO 4217 code", ErrInvalidCurrency, code)
	}
	unit, err := currency.ParseISO(code)
	if err != nil || notLegalTender[code] {
		return 0, fmt.Errorf("%w: %q is not an ISO 4217 currency", ErrInvalidCurrency, code)
	}
	digits, _ := currency.Standard.Rounding(unit)
	return digits, nil
}

// DefaultMaxMinor is the largest amount of one charge, in minor units:
// 99,999,999, as at Stripe (eight digits: 999,999.99 in a currency with two
// decimals, 99,999,999 in one with none).
const DefaultMaxMinor int64 = 99_999_999

// MaxMinor returns the largest amount, in minor units, that one order or
// charge may have in the currency. Today every currency has
// DefaultMaxMinor; a provider's own limit for a currency goes here. Sums of
// such amounts are checked against overflow with AddMinor.
func MaxMinor(code string) int64 {
	return DefaultMaxMinor
}

// ParseMoney reads a decimal string such as "548.90" in the given currency.
// The amount has one form, the one Decimal writes: digits with no leading
// zeros (a single 0 before the point is one), and exactly the currency's
// number of decimals ("548.90" in TRY, "1000" in JPY, "12.345" in KWD). It
// must be positive and at most MaxMinor. Signs, exponents, spaces,
// thousands separators, "548.9" and "0548.90" are refused.
func ParseMoney(amount, code string) (Money, error) {
	if strings.HasPrefix(amount, "-") {
		// A price has no sign: the same answer as for "+5.00".
		return Money{}, fmt.Errorf("%w: %q is not a plain decimal number such as \"548.90\"", ErrInvalidAmount, amount)
	}
	minor, err := ParseAmount(amount, code)
	if err != nil {
		return Money{}, err
	}
	m, err := NewMoney(minor, code)
	if err != nil {
		return Money{}, err
	}
	if most := MaxMinor(code); minor > most {
		return Money{}, fmt.Errorf("%w: %s is over the largest amount, %s", ErrInvalidAmount, m, Money{Minor: most, Currency: code})
	}
	if canonical := m.Decimal(); canonical != amount {
		return Money{}, fmt.Errorf("%w: %q must be written %q: no leading zeros, and exactly the decimals of %s",
			ErrInvalidAmount, amount, canonical, code)
	}
	return m, nil
}

// ParseAmount reads a signed decimal string such as "548.90", "0.00" or
// "-12.50" in the given currency into minor units, with the exactness rules
// of ParseMoney. It is for amounts that may be zero or negative, such as the
// fee and the refunds of a settlement report; a leading "-" is the only sign
// accepted.
func ParseAmount(amount, code string) (int64, error) {
	digits, err := CurrencyDigits(code)
	if err != nil {
		return 0, err
	}
	unsigned, negative := strings.CutPrefix(amount, "-")
	whole, frac, hasPoint := strings.Cut(unsigned, ".")
	if whole == "" || (hasPoint && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return 0, fmt.Errorf("%w: %q is not a plain decimal number such as \"548.90\"", ErrInvalidAmount, amount)
	}
	if len(frac) > digits {
		return 0, fmt.Errorf("%w: %q has %s, but %s allows %d", ErrInvalidAmount, amount, Plural(len(frac), "decimal"), code, digits)
	}
	minor, err := strconv.ParseInt(whole+frac+strings.Repeat("0", digits-len(frac)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is too large", ErrInvalidAmount, amount)
	}
	if negative {
		minor = -minor
	}
	return minor, nil
}

// NewMoney checks an amount that is already in minor units, such as one read
// back from a database or a provider response: a positive amount of a known
// currency. It does not hold the amount to MaxMinor: the maximum is a rule of
// new input (ParseMoney, and the provider's own check), so that an order or a
// payment stored before a lower maximum still reads and settles.
func NewMoney(minor int64, code string) (Money, error) {
	if _, err := CurrencyDigits(code); err != nil {
		return Money{}, err
	}
	if minor <= 0 {
		return Money{}, fmt.Errorf("%w: %s is not positive", ErrInvalidAmount, Money{Minor: minor, Currency: code})
	}
	return Money{Minor: minor, Currency: code}, nil
}

// ErrOverflow is wrapped by the error of a sum of amounts that does not fit
// in int64 minor units.
var ErrOverflow = errors.New("amount overflow")

// AddMinor returns a+b, two amounts in minor units of one currency, or an
// error wrapping ErrOverflow when the sum does not fit in int64. Every sum of
// amounts goes through it, so that totals never wrap around.
func AddMinor(a, b int64) (int64, error) {
	sum := a + b
	// Overflow happened exactly when both operands have the same sign and
	// the sum's sign differs from it.
	if (a >= 0) == (b >= 0) && (sum >= 0) != (a >= 0) {
		return 0, fmt.Errorf("%w: %d + %d minor units does not fit in 64 bits", ErrOverflow, a, b)
	}
	return sum, nil
}

// Decimal formats the amount with exactly the currency's digits: "548.90",
// "1000", "12.345". It is the inverse of ParseMoney.
func (m Money) Decimal() string {
	digits, err := CurrencyDigits(m.Currency)
	if err != nil {
		// Money is only built by ParseMoney and NewMoney, which check the
		// currency; a zero or hand-made value still formats readably.
		digits = 0
	}
	sign, magnitude := "", uint64(m.Minor)
	if m.Minor < 0 {
		// Two's complement negation is exact for every int64, math.MinInt64 included.
		sign, magnitude = "-", -magnitude
	}
	s := strconv.FormatUint(magnitude, 10)
	if digits > 0 {
		if len(s) <= digits {
			s = strings.Repeat("0", digits-len(s)+1) + s
		}
		s = s[:len(s)-digits] + "." + s[len(s)-digits:]
	}
	return sign + s
}

// String formats the amount with its currency, as in "548.90 TRY".
func (m Money) String() string {
	return m.Decimal() + " " + m.Currency
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
