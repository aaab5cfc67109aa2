package codec

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"chargeonce/internal/ownerfile"
)

// MinTokenLength is the shortest codec token accepted: 32 characters of
// base64 carry 192 bits, beyond any guessing over HTTP.
const MinTokenLength = 32

// Token is the secret that the codec's HTTP handler asks of every caller,
// as "Authorization: Bearer <token>" or as the path prefix the Web UI's
// codec endpoint carries (see NewHTTPHandler).
type Token struct {
	sum [sha256.Size]byte
}

// tokenAlphabet is URL-safe base64's, which fits a header and a path alike.
const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// ParseToken checks a codec token: at least MinTokenLength characters of
// tokenAlphabet.
func ParseToken(s string) (Token, error) {
	if len(s) < MinTokenLength {
		return Token{}, fmt.Errorf("codec: a codec token has at least %d characters, this one %d", MinTokenLength, len(s))
	}
	if strings.TrimLeft(s, tokenAlphabet) != "" {
		return Token{}, errors.New("codec: a codec token has only the characters A-Z a-z 0-9 - _")
	}
	return Token{sum: sha256.Sum256([]byte(s))}, nil
}

// NewToken returns a fresh random codec token of 256 bits.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// matches reports, in constant time, whether s is the token. Comparing
// digests keeps the time independent of the length of s as well.
func (t Token) matches(s string) bool {
	given := sha256.Sum256([]byte(s))
	return t != (Token{}) && subtle.ConstantTimeCompare(given[:], t.sum[:]) == 1
}

// LoadOrCreateTokenFile reads the codec token kept at path, or generates one
// there as ownerfile.LoadOrCreate does (mode 0600), beside the payload key
// file. It returns the token's text, which the Web UI's codec endpoint and
// the CLI's --codec-auth need, and whether it was created.
func LoadOrCreateTokenFile(path string) (text string, created bool, err error) {
	text, created, err = ownerfile.LoadOrCreate(path, func() (string, error) { return NewToken(), nil })
	if err != nil {
		return "", false, fmt.Errorf("codec: token file: %w", err)
	}
	if _, err := ParseToken(text); err != nil {
		return "", false, fmt.Errorf("%w (in token file %s)", err, path)
	}
	return text, created, nil
}
