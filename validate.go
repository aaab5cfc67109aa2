package chargeonce

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// These rules are the one definition of what a field may hold. The checkout
// API answers a breach with 400, and the store refuses it too, so that a
// value the API lets through is never one the store turns into a 500.

// MaxDescriptionLength caps an order's description, in characters. The
// description is shown on the provider's dashboard.
const MaxDescriptionLength = 500

// ValidateDescription checks an order's description: valid UTF-8 of at most
// MaxDescriptionLength characters, with no control characters. Empty is
// allowed.
func ValidateDescription(d string) error {
	if !utf8.ValidString(d) {
		return errors.New("is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(d); n > MaxDescriptionLength {
		return fmt.Errorf("has %d characters; at most %d are allowed", n, MaxDescriptionLength)
	}
	if strings.IndexFunc(d, unicode.IsControl) >= 0 {
		return errors.New("must not contain control characters")
	}
	return nil
}

// cardTokenPattern is the form of a provider card token: letters, digits,
// underscores and dashes, as in "tok_visa".
var cardTokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// ValidateCardToken checks a card token's form: 1 to 255 letters, digits,
// underscores or dashes.
func ValidateCardToken(token string) error {
	if token == "" {
		return errors.New("is required")
	}
	if !cardTokenPattern.MatchString(token) {
		return errors.New("must be 1 to 255 letters, digits, underscores or dashes")
	}
	return nil
}
