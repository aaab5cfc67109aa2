package chargeonce

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// CardHashKeySize is the size of the secret key of card hashes in bytes.
const CardHashKeySize = 32

// CardHasher computes the keyed card hash that the database keeps instead
// of the card token: enough to tell "the same card again" from "another
// card", and, unlike a plain digest, not computable, so not reversible by
// trying tokens, without the key.
//
// The hash is the hex HMAC-SHA-256, under the key, of the token's SHA-256:
// a hash stored before hashes were keyed (LegacyCardHash, that SHA-256)
// can then be re-keyed without the token, which is kept nowhere.
type CardHasher struct {
	key []byte
}

// ParseCardHashKey reads a card-hash key: standard base64 of
// CardHashKeySize random bytes, as NewCardHashKey writes it.
func ParseCardHashKey(text string) (CardHasher, error) {
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return CardHasher{}, errors.New("card hash key: not standard base64")
	}
	if len(key) != CardHashKeySize {
		return CardHasher{}, fmt.Errorf("card hash key: %d bytes, want %d", len(key), CardHashKeySize)
	}
	return CardHasher{key: key}, nil
}

// NewCardHashKey returns a fresh random card-hash key in the form
// ParseCardHashKey reads.
func NewCardHashKey() string {
	key := make([]byte, CardHashKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(key)
}

// Valid reports whether h has a key; the zero CardHasher has none.
func (h CardHasher) Valid() bool { return len(h.key) == CardHashKeySize }

// Hash returns the keyed hash of a card token.
func (h CardHasher) Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return h.mac(sum[:])
}

// Rekey turns a legacy card hash into the keyed hash of the same token.
func (h CardHasher) Rekey(legacy string) (string, error) {
	sum, err := hex.DecodeString(legacy)
	if err != nil || len(sum) != sha256.Size {
		return "", fmt.Errorf("card hash %q is not a hex SHA-256", legacy)
	}
	return h.mac(sum), nil
}

func (h CardHasher) mac(tokenSum []byte) string {
	m := hmac.New(sha256.New, h.key)
	m.Write(tokenSum)
	return hex.EncodeToString(m.Sum(nil))
}
