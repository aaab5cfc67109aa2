// Package webhook signs and verifies events in the Standard Webhooks form:
// the headers webhook-id, webhook-timestamp and webhook-signature, where the
// signature is "v1," and the base64 of an HMAC-SHA256 over
// "id.timestamp.body" keyed with a whsec_ secret. The fake provider signs
// with it and the checkout API verifies with it, so that the two can never
// disagree on the format; both take the provider contract's event types
// from here too.
//
// A verifier holds several secrets, so that a rotated secret stays valid
// while the sender moves to the new one, and a sender may sign with several
// at once (several signatures in one header).
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a signed event.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far the timestamp of an event may be from the
// receiver's clock, either way; an older one may be a replay.
const Tolerance = 5 * time.Minute

// secretPrefix starts every serialized secret.
const secretPrefix = "whsec_"

// Bounds of a secret's key, in bytes, as the specification recommends.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
)

// signatureVersion is the only scheme of the specification this package
// speaks: a symmetric HMAC-SHA256.
const signatureVersion = "v1"

// Errors of Verify, matched with errors.Is. Every one means the event must
// be refused.
var (
	ErrMissingHeader = errors.New("webhook: a signature header is missing")
	ErrTimestamp     = errors.New("webhook: the timestamp is not whole Unix seconds")
	ErrStale         = errors.New("webhook: the timestamp is more than 5 minutes away from now")
	ErrNoSignature   = errors.New("webhook: the signature header holds no v1 signature")
	ErrNoMatch       = errors.New("webhook: no signature matches any secret")
)

// Secret is an HMAC key, serialized as whsec_ and its base64.
type Secret struct {
	key []byte
}

// ParseSecret reads a whsec_ secret.
func ParseSecret(s string) (Secret, error) {
	rest, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return Secret{}, errors.New("webhook: a secret starts with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return Secret{}, errors.New("webhook: a secret is whsec_ followed by standard base64")
	}
	if len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return Secret{}, fmt.Errorf("webhook: a secret's key has %d to %d bytes, this one %d", minKeyBytes, maxKeyBytes, len(key))
	}
	return Secret{key: key}, nil
}

// ParseSecrets reads a list of whsec_ secrets, as flags give them. It
// refuses an empty list: nothing could verify.
func ParseSecrets(list []string) ([]Secret, error) {
	if len(list) == 0 {
		return nil, errors.New("webhook: at least one secret is needed")
	}
	secrets := make([]Secret, len(list))
	for i, s := range list {
		var err error
		if secrets[i], err = ParseSecret(s); err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
	}
	return secrets, nil
}

// NewSecret returns a fresh random secret, serialized.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// String serializes the secret as whsec_ and its base64.
func (s Secret) String() string {
	return secretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

func (s Secret) mac(id string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, ts, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Sign sets the three headers of an event with this id, sent at ts, with
// one signature per secret.
func Sign(h http.Header, id string, ts time.Time, body []byte, secrets ...Secret) {
	sigs := make([]string, len(secrets))
	for i, s := range secrets {
		sigs[i] = signatureVersion + "," + base64.StdEncoding.EncodeToString(s.mac(id, ts.Unix(), body))
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
}

// ParseSignatures reads a webhook-signature header: space-separated
// entries of a version, a comma and a base64 signature. It returns the
// decoded v1 signatures; entries of other versions, and v1 entries that do
// not decode to an HMAC-SHA256, are skipped, since a sender may add schemes
// this package does not know.
func ParseSignatures(header string) ([][]byte, error) {
	var sigs [][]byte
	for entry := range strings.SplitSeq(header, " ") {
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok || version != signatureVersion {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil || len(sig) != sha256.Size {
			continue
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, ErrNoSignature
	}
	return sigs, nil
}

// Verifier checks events against its secrets.
type Verifier struct {
	secrets []Secret
	now     func() time.Time
}

// NewVerifier returns a Verifier of secrets on the clock now; nil means
// time.Now.
func NewVerifier(secrets []Secret, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{secrets: secrets, now: now}
}

// Verify checks the headers of an event against body, and returns its id.
// The timestamp must be within Tolerance of now, and one of the
// signatures must be the HMAC of one of the secrets; each comparison takes
// the same time whatever the bytes.
func (v *Verifier) Verify(h http.Header, body []byte) (string, error) {
	id, rawTS, rawSig := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || rawTS == "" || rawSig == "" {
		return "", ErrMissingHeader
	}
	ts, err := strconv.ParseInt(rawTS, 10, 64)
	if err != nil {
		return "", ErrTimestamp
	}
	now := v.now().Unix()
	if tol := int64(Tolerance / time.Second); ts < now-tol || ts > now+tol {
		return "", ErrStale
	}
	sigs, err := ParseSignatures(rawSig)
	if err != nil {
		return "", err
	}
	for _, s := range v.secrets {
		want := s.mac(id, ts, body)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return id, nil
			}
		}
	}
	return "", ErrNoMatch
}
