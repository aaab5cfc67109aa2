// Package idemkey owns the wire form of the Idempotency-Key header, as the
// IETF draft defines it: one RFC 9651 Structured Field Item whose value is
// a String, such as "8e03978e-40d5-43e8-bc93-6894a57f9324" with its quotes.
// The key is the String's value, at most MaxLength characters; parameters
// are ignored, as RFC 9651 asks of parameters a field does not define.
// chargeonce's API and the provider client read and write the header here,
// and so does the fake provider, which alone also takes a bare Token.
package idemkey

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Header is the header's name.
const Header = "Idempotency-Key"

// MaxLength is the longest key, in characters, that is accepted.
const MaxLength = 255

// Example is a key in the header's form, for the messages that tell it.
const Example = `"8e03978e-40d5-43e8-bc93-6894a57f9324"`

// The ways a header can be refused. Every error of Parse is one of them.
var (
	// ErrMissing: no Idempotency-Key header.
	ErrMissing = errors.New("Idempotency-Key header is required")
	// ErrEmpty: an empty key, or a header of blanks.
	ErrEmpty = errors.New("Idempotency-Key must not be empty")
	// ErrTooLong: a key longer than MaxLength.
	ErrTooLong = fmt.Errorf("Idempotency-Key must be at most %d characters", MaxLength)
	// ErrNotString: a header that is no Structured Field Item, or one of
	// another type than a String: a bare Token, an Integer, an Inner
	// List, and so on.
	ErrNotString = errors.New("Idempotency-Key must be a Structured Field String, such as " + Example)
)

// Parse reads the key from the header's values (http.Header.Values): a
// String, of 1 to MaxLength characters. A bare Token is refused with
// ErrNotString: the draft's header is a String.
func Parse(values []string) (string, error) {
	return parse(values, false)
}

// ParseTokenToo is Parse that also takes a bare Token as the key, as a
// lenient server of the draft may.
func ParseTokenToo(values []string) (string, error) {
	return parse(values, true)
}

func parse(values []string, tokenToo bool) (string, error) {
	if len(values) == 0 {
		return "", ErrMissing
	}
	if len(values) == 1 && strings.TrimSpace(values[0]) == "" {
		return "", ErrEmpty
	}
	item, err := httpsfv.UnmarshalItem(values)
	if err != nil {
		return "", ErrNotString
	}
	var key string
	switch v := item.Value.(type) {
	case string:
		key = v
	case httpsfv.Token:
		if !tokenToo {
			return "", ErrNotString
		}
		key = string(v)
	default:
		return "", ErrNotString
	}
	switch {
	case key == "":
		return "", ErrEmpty
	case len(key) > MaxLength:
		return "", ErrTooLong
	}
	return key, nil
}

// Format is the header's value for key: key as a String. It fails for a
// key that is empty, longer than MaxLength, or not printable ASCII, which
// no String can hold.
func Format(key string) (string, error) {
	switch {
	case key == "":
		return "", errors.New("idempotency key is empty")
	case len(key) > MaxLength:
		return "", fmt.Errorf("idempotency key has %d characters, more than %d", len(key), MaxLength)
	}
	sf, err := httpsfv.Marshal(httpsfv.NewItem(key))
	if err != nil {
		return "", fmt.Errorf("idempotency key %q is not a Structured Field String (printable ASCII only): %w", key, err)
	}
	return sf, nil
}
