package codec

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadOrCreateKeyFile reads the keyring stored at path, in the form
// ParseKeyring reads. If the file does not exist it generates a fresh random
// key, writes it there readable by the owner only (0600), creating missing
// directories with mode 0700, and reports created = true so the caller can
// tell the user.
//
// An existing file that others can read is refused: it would expose every
// payload encrypted with its keys.
func LoadOrCreateKeyFile(path string) (k *Keyring, created bool, err error) {
	k, err = loadKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}

	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("codec: generate key: %w", err)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, false, fmt.Errorf("codec: generate key id: %w", err)
	}
	// A random suffix keeps IDs distinct when keyrings from several machines
	// are merged later.
	id := "local-" + hex.EncodeToString(suffix)
	keys := map[string][]byte{id: key}
	k, err = newKeyring([]string{id}, keys)
	if err != nil {
		return nil, false, err
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("codec: create key file directory: %w", err)
	}
	// O_EXCL: if another process created the file since we looked, keep its
	// key rather than overwrite it and orphan what it already encrypted.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		k, err = loadKeyFile(path)
		return k, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("codec: create key file: %w", err)
	}
	_, werr := f.WriteString(format([]string{id}, keys) + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, false, errors.Join(fmt.Errorf("codec: write key file %s: %w", path, werr), os.Remove(path))
	}
	return k, true, nil
}

// loadKeyFile parses the keyring at path. It returns an error wrapping
// fs.ErrNotExist if there is no file.
func loadKeyFile(path string) (*Keyring, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("codec: key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("codec: key file %s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("codec: key file %s has mode %04o; it must be readable by its owner only (chmod 600)", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec: key file: %w", err)
	}
	k, err := ParseKeyring(string(data))
	if err != nil {
		return nil, fmt.Errorf("%w (in key file %s)", err, path)
	}
	return k, nil
}
