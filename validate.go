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

// ValidateDescription checks an order's description: free text (see
// ValidateText) of at most MaxDescriptionLength characters. Empty is allowed.
func ValidateDescription(d string) error {
	if err := ValidateText(d); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(d); n > MaxDescriptionLength {
		return fmt.Errorf("has %d characters; at most %d are allowed", n, MaxDescriptionLength)
	}
	return nil
}

// ValidateText is the rule of every free-text field: valid UTF-8 with no
// control characters (Unicode category Cc) and no format characters (Cf).
// Format characters are invisible yet change what a reader sees: U+202E
// (right-to-left override) and the other bidi controls reorder the text
// around them, and U+200B, U+2060 and U+FEFF hide inside a word. Zero-width
// joiners (U+200C, U+200D), and so the emoji sequences built with them, are
// refused too, as they are of the same category.
func ValidateText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return fmt.Errorf("must not contain control characters, such as %U at byte %d", runeAt(s, i), i)
	}
	if i := strings.IndexFunc(s, isFormat); i >= 0 {
		return fmt.Errorf("must not contain invisible format characters, such as %U at byte %d", runeAt(s, i), i)
	}
	return nil
}

func isFormat(r rune) bool { return unicode.Is(unicode.Cf, r) }

func runeAt(s string, i int) rune {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r
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
