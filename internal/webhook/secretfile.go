package webhook

import (
	"fmt"

	"chargeonce/internal/ownerfile"
)

// LoadOrCreateSecretFile reads the secret kept at path, or, when there is
// no file, writes a fresh one there as ownerfile.LoadOrCreate does (mode
// 0600), and reports created = true. A file others can read is refused.
func LoadOrCreateSecretFile(path string) (s Secret, created bool, err error) {
	text, created, err := ownerfile.LoadOrCreate(path, func() (string, error) { return NewSecret(), nil })
	if err != nil {
		return Secret{}, false, fmt.Errorf("webhook: secret file: %w", err)
	}
	if s, err = ParseSecret(text); err != nil {
		return Secret{}, false, fmt.Errorf("webhook: secret file %s: %w", path, err)
	}
	return s, created, nil
}
