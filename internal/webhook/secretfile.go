package webhook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// LoadOrCreateSecretFile reads the secret kept at path, or, when there is
// no file, writes a fresh one there, readable by the owner only, and
// reports created.
func LoadOrCreateSecretFile(path string) (s Secret, created bool, err error) {
	s, err = loadSecretFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, false, err
	}
	fresh := NewSecret()
	// O_EXCL: a process that created the file meanwhile keeps its secret.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		s, err = loadSecretFile(path)
		return s, false, err
	}
	if err != nil {
		return Secret{}, false, fmt.Errorf("webhook: create secret file: %w", err)
	}
	_, werr := f.WriteString(fresh + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Secret{}, false, errors.Join(fmt.Errorf("webhook: write secret file %s: %w", path, werr), os.Remove(path))
	}
	s, err = ParseSecret(fresh)
	return s, true, err
}

func loadSecretFile(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("webhook: secret file: %w", err)
	}
	s, err := ParseSecret(strings.TrimSpace(string(b)))
	if err != nil {
		return Secret{}, fmt.Errorf("webhook: secret file %s: %w", path, err)
	}
	return s, nil
}
