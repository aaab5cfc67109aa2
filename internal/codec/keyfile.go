package codec

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"chargeonce/internal/ownerfile"
)

// LoadOrCreateKeyFile reads the keyring stored at path, in the form
// ParseKeyring reads. If the file does not exist it generates a fresh random
// key and writes it there as ownerfile.LoadOrCreate does (mode 0600, missing
// directories 0700), and reports created = true so the caller can tell the
// user.
//
// An existing file that others can read is refused: it would expose every
// payload encrypted with its keys.
func LoadOrCreateKeyFile(path string) (k *Keyring, created bool, err error) {
	text, created, err := ownerfile.LoadOrCreate(path, NewKeyringText)
	if err != nil {
		return nil, false, fmt.Errorf("codec: key file: %w", err)
	}
	k, err = ParseKeyring(text)
	if err != nil {
		return nil, false, fmt.Errorf("%w (in key file %s)", err, path)
	}
	return k, created, nil
}

// NewKeyringText returns a keyring of one new random key, in the form
// ParseKeyring reads.
func NewKeyringText() (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("codec: generate key: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("codec: generate key id: %w", err)
	}
	// A random suffix keeps IDs distinct when keyrings from several machines
	// are merged later.
	id := "local-" + hex.EncodeToString(suffix)
	return format([]string{id}, map[string][]byte{id: key}), nil
}
