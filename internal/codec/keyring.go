// Package codec encrypts Temporal payloads with AES-256-GCM, so that card
// tokens and other workflow data never reach Temporal's history in clear
// text.
//
// Keys live in a Keyring: payloads are encrypted with its current key and
// decrypted with whichever key encrypted them, so keys can be rotated without
// losing access to older histories.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

const (
	// KeySize is the length of every key in bytes (AES-256).
	KeySize = 32
	// maxKeyIDLength keeps key IDs, which travel with every payload, short.
	maxKeyIDLength = 64
)

// Keyring holds the keys a Codec may use: the current one, which encrypts,
// and older ones that only decrypt. It is immutable and safe for concurrent
// use. Its String form names the keys but never reveals them.
type Keyring struct {
	current string
	ids     []string // in the order given, current first
	aeads   map[string]cipher.AEAD
}

// NewKeyring builds a keyring from keys by ID. currentID names the key that
// encrypts; it must be one of keys. Every key must be exactly KeySize bytes,
// and IDs may use only letters, digits, '.', '_' and '-'.
func NewKeyring(currentID string, keys map[string][]byte) (*Keyring, error) {
	if _, ok := keys[currentID]; !ok {
		return nil, fmt.Errorf("codec: current key %q is not among the keys", currentID)
	}
	ids := make([]string, 0, len(keys))
	ids = append(ids, currentID)
	for id := range keys {
		if id != currentID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids[1:])
	return newKeyring(ids, keys)
}

// newKeyring builds a keyring whose current key is ids[0].
func newKeyring(ids []string, keys map[string][]byte) (*Keyring, error) {
	k := &Keyring{current: ids[0], ids: ids, aeads: make(map[string]cipher.AEAD, len(ids))}
	for _, id := range ids {
		if err := validateKeyID(id); err != nil {
			return nil, fmt.Errorf("codec: %w", err)
		}
		key := keys[id]
		if len(key) != KeySize {
			return nil, fmt.Errorf("codec: key %q is %d bytes; AES-256 needs exactly %d", id, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", id, err)
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// ParseKeyring reads a keyring from its text form, as --codec-keys takes it:
// comma-separated "id:key" entries, key in standard base64 (with padding),
// current key first. For example:
//
//	k2:3q2+7w...=,k1:AAECAw...=
//
// Spaces around entries are ignored. Errors name the offending entry but
// never echo key material.
func ParseKeyring(s string) (*Keyring, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("codec: keyring is empty; expected comma-separated id:base64-key entries, current key first")
	}
	entries := strings.Split(s, ",")
	ids := make([]string, 0, len(entries))
	keys := make(map[string][]byte, len(entries))
	for i, entry := range entries {
		entry = strings.TrimSpace(entry)
		id, encoded, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("codec: keyring entry %d is not of the form id:base64-key", i+1)
		}
		if err := validateKeyID(id); err != nil {
			return nil, fmt.Errorf("codec: keyring entry %d: %w", i+1, err)
		}
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("codec: keyring entry %d: key id %q appears twice", i+1, id)
		}
		key, err := base64.StdEncoding.Strict().DecodeString(encoded)
		if err != nil {
			return nil, fmt.Errorf("codec: keyring entry %d (key %q): key is not valid standard base64", i+1, id)
		}
		ids = append(ids, id)
		keys[id] = key
	}
	return newKeyring(ids, keys)
}

// CurrentKeyID is the ID of the key that encrypts.
func (k *Keyring) CurrentKeyID() string { return k.current }

// KeyIDs lists the IDs of all keys, current first.
func (k *Keyring) KeyIDs() []string { return slices.Clone(k.ids) }

// String names the keys without revealing them.
func (k *Keyring) String() string {
	return fmt.Sprintf("codec.Keyring{current: %s, keys: %s}", k.current, strings.Join(k.ids, ","))
}

// GoString keeps %#v from printing the expanded keys.
func (k *Keyring) GoString() string { return k.String() }

// LogValue makes slog print the key IDs only.
func (k *Keyring) LogValue() slog.Value {
	return slog.GroupValue(slog.String("current", k.current), slog.Any("keys", k.ids))
}

// format renders the keyring in the form ParseKeyring reads.
func format(ids []string, keys map[string][]byte) string {
	entries := make([]string, len(ids))
	for i, id := range ids {
		entries[i] = id + ":" + base64.StdEncoding.EncodeToString(keys[id])
	}
	return strings.Join(entries, ",")
}

func validateKeyID(id string) error {
	if id == "" {
		return errors.New("key id is empty")
	}
	if len(id) > maxKeyIDLength {
		return fmt.Errorf("key id %.16q... is longer than %d characters", id, maxKeyIDLength)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("key id %q may contain only letters, digits, '.', '_' and '-'", id)
		}
	}
	return nil
}
