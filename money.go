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

// ParseMoney reads a decimal string such as "548.90" in the given currency.
// It is exact: the amount may have at most the currency's digits after the
// point ("1.2345 TRY" is an error, "1000 JPY" is 1000 yen), must be positive,
// and must fit in int64 minor units. Signs, exponents, spaces and thousands
// separators are refused.
func ParseMoney(amount, code string) (Money, error) {
	if strings.HasPrefix(amount, "-") {
		// A price has no sign: the same answer as for "+5.00".
		return Money{}, fmt.Errorf("%w: %q is not a plain decimal number such as \"548.90\"", ErrInvalidAmount, amount)
	}
	minor, err := ParseAmount(amount, code)
	if err != nil {
		return Money{}, err
	}
	if minor <= 0 {
		return Money{}, fmt.Errorf("%w: %q is not positive", ErrInvalidAmount, amount)
	}
	return Money{Minor: minor, Currency: code}, nil
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
		return 0, fmt.Errorf("%w: %q has %d decimals, but %s allows %d", ErrInvalidAmount, amount, len(frac), code, digits)
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
// back from a database or a provider response.
func NewMoney(minor int64, code string) (Money, error) {
	if _, err := CurrencyDigits(code); err != nil {
		return Money{}, err
	}
	if minor <= 0 {
		return Money{}, fmt.Errorf("%w: %d minor units is not positive", ErrInvalidAmount, minor)
	}
	return Money{Minor: minor, Currency: code}, nil
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
