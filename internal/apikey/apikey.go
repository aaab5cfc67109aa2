// Package apikey owns the checkout API's secret keys: their format, the hash
// that is stored in place of the secret, their scopes, how a request's key
// is authenticated, and the interface of the store that keeps them.
//
// A key reads ck_<id>_<secret>: a public id of 16 hex digits, which names
// the key in lists and logs, and a secret of 64 hex digits (256 random
// bits). Only the SHA-256 of the secret is stored. A fast hash is enough:
// unlike a password, a 256-bit random secret cannot be guessed, so slowing
// down each guess buys nothing and would only slow down every request.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"chargeonce/internal/ownerfile"
)

// Scope is what a key may do.
type Scope string

// The scopes. A key holds one or more.
const (
	// ScopeCheckout creates orders, checks them out and reads them.
	ScopeCheckout Scope = "checkout"
	// ScopeRefund refunds payments; it is reserved for the refunds API.
	ScopeRefund Scope = "refund"
	// ScopeOperator runs and reads settlements and reads /metrics: the
	// books and the operations, which no shop front needs.
	ScopeOperator Scope = "operator"
	// ScopeViewer signs in to the operator's console to read it: it can
	// see what an operator sees and change nothing.
	ScopeViewer Scope = "viewer"
)

// scopes lists every scope in the order in which they are written.
var scopes = []Scope{ScopeCheckout, ScopeRefund, ScopeOperator, ScopeViewer}

// AllScopes returns every scope, as a key that may do everything holds them.
func AllScopes() []Scope { return append([]Scope(nil), scopes...) }

// ParseScopes reads a comma-separated list of scopes, such as
// "checkout,operator", and returns them in their canonical order. An
// unknown, empty or repeated scope is an error.
func ParseScopes(s string) ([]Scope, error) {
	seen := map[Scope]bool{}
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if !sc.valid() {
			return nil, fmt.Errorf("apikey: unknown scope %q: the scopes are %s", sc, FormatScopes(scopes))
		}
		if seen[sc] {
			return nil, fmt.Errorf("apikey: scope %q is given twice", sc)
		}
		seen[sc] = true
	}
	var out []Scope
	for _, sc := range scopes {
		if seen[sc] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// FormatScopes writes scopes as ParseScopes reads them.
func FormatScopes(s []Scope) string {
	parts := make([]string, len(s))
	for i, sc := range s {
		parts[i] = string(sc)
	}
	return strings.Join(parts, ",")
}

func (s Scope) valid() bool {
	for _, sc := range scopes {
		if s == sc {
			return true
		}
	}
	return false
}

const (
	prefix    = "ck_"
	idBytes   = 8
	idLen     = 2 * idBytes
	secretLen = 2 * sha256.Size
	keyLen    = len(prefix) + idLen + 1 + secretLen
	// maxNameLen caps a key's name, which is for people reading a list.
	maxNameLen = 100
)

// Key is a whole key, secret included. It exists when a key is created,
// to be shown once, and when a request presents it.
type Key struct {
	ID     string
	secret string
}

// String returns the key as it is given to a client: ck_<id>_<secret>.
func (k Key) String() string { return prefix + k.ID + "_" + k.secret }

// Parse reads a key in the form that String writes.
func Parse(s string) (Key, error) {
	if len(s) != keyLen || !strings.HasPrefix(s, prefix) || s[len(prefix)+idLen] != '_' {
		return Key{}, ErrMalformed
	}
	k := Key{ID: s[len(prefix) : len(prefix)+idLen], secret: s[len(prefix)+idLen+1:]}
	if !lowerHex(k.ID) || !lowerHex(k.secret) {
		return Key{}, ErrMalformed
	}
	return k, nil
}

// ValidID reports whether id is the id of a key: 16 lower-case hex digits.
func ValidID(id string) bool { return len(id) == idLen && lowerHex(id) }

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// hash is what is stored in place of the secret.
func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Record is a key as the store keeps it: everything but the secret.
type Record struct {
	ID string
	// Name says whom or what the key is for, for people reading a list.
	Name string
	// Hash is the hex SHA-256 of the secret.
	Hash   string
	Scopes []Scope
	// CreatedAt is when the key was made.
	CreatedAt time.Time
	// RevokedAt is when the key stops working, nil while no revocation is
	// set. It may lie in the future: a rotation lets the old key work until
	// every client holds the new one.
	RevokedAt *time.Time
}

// Has reports whether the key holds the scope.
func (r Record) Has(s Scope) bool {
	for _, sc := range r.Scopes {
		if sc == s {
			return true
		}
	}
	return false
}

// ActiveAt reports whether the key works at t.
func (r Record) ActiveAt(t time.Time) bool { return r.RevokedAt == nil || t.Before(*r.RevokedAt) }

// Validate checks a record before it is stored.
func (r Record) Validate() error {
	switch {
	case !ValidID(r.ID):
		return fmt.Errorf("apikey: id %q is not 16 lower-case hex digits", r.ID)
	case len(r.Hash) != secretLen || !lowerHex(r.Hash):
		return errors.New("apikey: the hash is not a lower-case hex SHA-256")
	case len(r.Scopes) == 0:
		return errors.New("apikey: a key needs at least one scope")
	case r.CreatedAt.IsZero():
		return errors.New("apikey: the creation time is missing")
	}
	if _, err := ParseScopes(FormatScopes(r.Scopes)); err != nil {
		return err
	}
	return ValidateName(r.Name)
}

// ValidateName checks a key's name: printable UTF-8 text of at most 100
// characters, possibly empty.
func ValidateName(name string) error {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxNameLen {
		return fmt.Errorf("apikey: the name must be UTF-8 text of at most %d characters", maxNameLen)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errors.New("apikey: the name must not hold control characters")
		}
	}
	return nil
}

// New makes a key with a fresh id and secret, and its record.
func New(name string, scopes []Scope, now time.Time) (Key, Record, error) {
	raw := make([]byte, idBytes+secretLen/2)
	if _, err := rand.Read(raw); err != nil {
		return Key{}, Record{}, fmt.Errorf("apikey: generate a key: %w", err)
	}
	k := Key{ID: hex.EncodeToString(raw[:idBytes]), secret: hex.EncodeToString(raw[idBytes:])}
	rec := Record{ID: k.ID, Name: name, Hash: hash(k.secret), Scopes: scopes, CreatedAt: now}
	if err := rec.Validate(); err != nil {
		return Key{}, Record{}, err
	}
	return k, rec, nil
}

// Store keeps the keys' records.
type Store interface {
	// CreateAPIKey stores a new key's record.
	CreateAPIKey(ctx context.Context, r Record) error
	// APIKey returns the record of the key with this id, or an error that
	// wraps ErrUnknown.
	APIKey(ctx context.Context, id string) (Record, error)
	// APIKeys returns every key's record, oldest first.
	APIKeys(ctx context.Context) ([]Record, error)
	// RevokeAPIKey makes the key stop working at the given time and returns
	// its record. A revocation only ever moves earlier: a key revoked for
	// a time before at keeps that time. An unknown id wraps ErrUnknown.
	RevokeAPIKey(ctx context.Context, id string, at time.Time) (Record, error)
}

// The reasons a request is not authenticated. Each is a 401; their messages
// are safe to tell the client.
var (
	ErrMissing   = errors.New("no API key: send Authorization: Bearer ck_…")
	ErrMalformed = errors.New("the API key is not of the form ck_<id>_<secret>")
	ErrUnknown   = errors.New("the API key is not known")
	ErrRevoked   = errors.New("the API key is revoked")
)

// Authenticate reads the key of an Authorization header ("Bearer ck_…"),
// and returns its record if the store knows it, its secret matches and it
// works at now.
func Authenticate(ctx context.Context, st Store, authorization string, now time.Time) (Record, error) {
	scheme, token, found := strings.Cut(authorization, " ")
	if authorization == "" {
		return Record{}, ErrMissing
	}
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return Record{}, ErrMalformed
	}
	k, err := Parse(strings.TrimSpace(token))
	if err != nil {
		return Record{}, err
	}
	rec, err := st.APIKey(ctx, k.ID)
	if err != nil {
		return Record{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hash(k.secret)), []byte(rec.Hash)) != 1 {
		// A wrong secret for a known id says no more than an unknown id.
		return Record{}, ErrUnknown
	}
	if !rec.ActiveAt(now) {
		return Record{}, ErrRevoked
	}
	return rec, nil
}

// FileName is the name of a file that holds one key, as the dev stack and
// the local cluster write it into their data directories.
const FileName = "api.key"

// WriteFile writes k to path, readable by its owner only (ownerfile.Write),
// replacing what the path held.
func WriteFile(path string, k Key) error {
	if err := ownerfile.Write(path, []byte(k.String()+"\n")); err != nil {
		return fmt.Errorf("apikey: write key file: %w", err)
	}
	return nil
}

// LoadOrCreateFile returns the key in the file at path when st knows it and
// it works; otherwise, as on a first start or after the database was
// reset, it creates a key with this name and these scopes in st, writes it
// to path (WriteFile) and reports created. The dev stack and the local
// cluster keep the key of their clients so.
func LoadOrCreateFile(ctx context.Context, st Store, path, name string, scopes []Scope) (k Key, created bool, err error) {
	if k, err := ReadFile(path); err == nil {
		if _, err := Authenticate(ctx, st, "Bearer "+k.String(), time.Now()); err == nil {
			return k, false, nil
		}
	}
	k, rec, err := New(name, scopes, time.Now())
	if err != nil {
		return Key{}, false, err
	}
	if err := st.CreateAPIKey(ctx, rec); err != nil {
		return Key{}, false, err
	}
	if err := WriteFile(path, k); err != nil {
		return Key{}, false, err
	}
	return k, true, nil
}

// ReadFile reads the key that WriteFile wrote, from a file only its owner
// may read (ownerfile.Read).
func ReadFile(path string) (Key, error) {
	data, err := ownerfile.Read(path)
	if err != nil {
		return Key{}, fmt.Errorf("apikey: key file: %w", err)
	}
	k, err := Parse(data)
	if err != nil {
		return Key{}, fmt.Errorf("apikey: key file %s: %w", path, err)
	}
	return k, nil
}
