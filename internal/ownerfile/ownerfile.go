// Package ownerfile keeps files that only their owner may read: the secrets
// (payload keys, the codec token, webhook secrets, the card-hash key, API
// keys, the local cluster's certificate keys) and the SQLite databases. Files
// are mode 0600 and the directories it creates 0700, so that another account
// on the machine reads neither card data nor the keys that would decrypt it.
package ownerfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// File and directory modes of what this package creates.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// Read returns the content of the secret file at path without surrounding
// white space. A file that is not regular, or that its group or others may
// read, is refused: the secret may already have leaked, and using it would
// hide that. A missing file is an error wrapping fs.ErrNotExist.
func Read(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %04o; it must be readable by its owner only (chmod 600)", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// LoadOrCreate returns the secret kept at path. If there is no file, it
// writes fresh() there with mode 0600, creating missing directories with
// mode 0700, and reports created = true so that the caller can tell the
// user. When two processes race, the one that loses reads the winner's
// secret rather than overwrite it.
func LoadOrCreate(path string, fresh func() (string, error)) (secret string, created bool, err error) {
	secret, err = Read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	if secret, err = fresh(); err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if errors.Is(err, fs.ErrExist) {
		secret, err = Read(path)
		return secret, false, err
	}
	if err != nil {
		return "", false, err
	}
	_, werr := f.WriteString(secret + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", false, errors.Join(werr, os.Remove(path))
	}
	return secret, true, nil
}

// Write writes content to path with mode 0600, creating missing directories
// with mode 0700, and replaces what the path held. The old file is removed
// first, so that the new one never keeps an older file's looser mode.
func Write(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, content, FileMode)
}

// Restrict prepares path for a database file that only its owner may read:
// it creates the file empty with mode 0600 if it is missing, and takes the
// group's and others' permissions off an existing file and off the journal
// files beside it. SQLite gives the journal and WAL files it creates later
// the database file's mode. A missing directory, or a directory where the
// file should be, is left for the database's own open to report: where a
// database lives, and who may list that directory, is its operator's choice.
func Restrict(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(p, perm&^0o077); err != nil {
				return err
			}
		}
	}
	return nil
}
