package webhook_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/webhook"
)

// The example of the Standard Webhooks specification: its secret, message
// and the signature it publishes for them.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func mustSecret(t *testing.T, s string) webhook.Secret {
	t.Helper()
	secret, err := webhook.ParseSecret(s)
	require.NoError(t, err)
	return secret
}

func TestSign_MatchesTheSpecificationsExample(t *testing.T) {
	h := http.Header{}
	webhook.Sign(h, specID, time.Unix(specTimestamp, 0), []byte(specBody), mustSecret(t, specSecret))
	require.Equal(t, specID, h.Get(webhook.HeaderID))
	require.Equal(t, strconv.Itoa(specTimestamp), h.Get(webhook.HeaderTimestamp))
	require.Equal(t, specSignature, h.Get(webhook.HeaderSignature))
}

func TestVerify_Cases(t *testing.T) {
	sent := time.Unix(specTimestamp, 0)
	current, old, other := mustSecret(t, specSecret), mustSecret(t, webhook.NewSecret()), mustSecret(t, webhook.NewSecret())
	// raw sets the headers as given, whatever they hold.
	raw := func(id, ts, sig string) http.Header {
		h := http.Header{}
		for name, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig} {
			if v != "" {
				h.Set(name, v)
			}
		}
		return h
	}
	specTS := strconv.Itoa(specTimestamp)
	signed := func(at time.Time, secrets ...webhook.Secret) http.Header {
		h := http.Header{}
		webhook.Sign(h, specID, at, []byte(specBody), secrets...)
		return h
	}
	tests := []struct {
		name    string
		headers http.Header
		body    string
		// verifier holds these secrets, and its clock says sent+age.
		secrets []webhook.Secret
		age     time.Duration
		want    error
	}{
		{name: "the specification's example", headers: raw(specID, specTS, specSignature), secrets: []webhook.Secret{current}},
		{name: "good", headers: signed(sent, current), secrets: []webhook.Secret{current}},
		{name: "wrong secret", headers: signed(sent, other), secrets: []webhook.Secret{current}, want: webhook.ErrNoMatch},
		{name: "rotated: signed with the old secret, both still valid", headers: signed(sent, old), secrets: []webhook.Secret{current, old}},
		{name: "rotated: signed with the new secret", headers: signed(sent, current), secrets: []webhook.Secret{current, old}},
		{name: "just within the tolerance, late", headers: signed(sent, current), secrets: []webhook.Secret{current}, age: webhook.Tolerance},
		{name: "just within the tolerance, early", headers: signed(sent, current), secrets: []webhook.Secret{current}, age: -webhook.Tolerance},
		{name: "stale timestamp", headers: signed(sent, current), secrets: []webhook.Secret{current}, age: webhook.Tolerance + time.Second, want: webhook.ErrStale},
		{name: "future timestamp", headers: signed(sent, current), secrets: []webhook.Secret{current}, age: -webhook.Tolerance - time.Second, want: webhook.ErrStale},
		{name: "tampered body", headers: signed(sent, current), body: `{"test": 2432232315}`, secrets: []webhook.Secret{current}, want: webhook.ErrNoMatch},
		{name: "several signatures, one good", headers: signed(sent, other, current), secrets: []webhook.Secret{current}},
		{name: "several signatures, none good", headers: signed(sent, other, old), secrets: []webhook.Secret{current}, want: webhook.ErrNoMatch},
		{name: "unknown versions beside a good one", headers: raw(specID, specTS, "v1a,abcd v2,!! "+specSignature), secrets: []webhook.Secret{current}},
		{name: "no v1 signature", headers: raw(specID, specTS, "v1a,g0hM9SsE"), secrets: []webhook.Secret{current}, want: webhook.ErrNoSignature},
		{name: "missing signature", headers: raw(specID, specTS, ""), secrets: []webhook.Secret{current}, want: webhook.ErrMissingHeader},
		{name: "missing id", headers: raw("", specTS, specSignature), secrets: []webhook.Secret{current}, want: webhook.ErrMissingHeader},
		{name: "timestamp not in seconds", headers: raw(specID, "2021-02-25T15:02:10Z", specSignature), secrets: []webhook.Secret{current}, want: webhook.ErrTimestamp},
		{name: "another id under the same signature", headers: raw("msg_other", specTS, specSignature), secrets: []webhook.Secret{current}, want: webhook.ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = specBody
			}
			v := webhook.NewVerifier(tt.secrets, func() time.Time { return sent.Add(tt.age) })
			id, err := v.Verify(tt.headers, []byte(body))
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				require.Empty(t, id)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.headers.Get(webhook.HeaderID), id)
		})
	}
}

func TestParseSecret_RefusesWhatIsNoSecret(t *testing.T) {
	for _, s := range []string{
		"",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",    // no prefix
		"whsec_not base64!",                   // not base64
		"whsec_c2hvcnQ=",                      // 5 bytes
		"whsec_" + strings.Repeat("QUFB", 30), // 90 bytes
	} {
		_, err := webhook.ParseSecret(s)
		require.Error(t, err, s)
	}
	_, err := webhook.ParseSecrets(nil)
	require.Error(t, err)
}

func TestNewSecret_RoundTrips(t *testing.T) {
	s := webhook.NewSecret()
	require.Equal(t, s, mustSecret(t, s).String())
	require.NotEqual(t, s, webhook.NewSecret())
}

// FuzzParseSignatures checks that any header parses without a panic, and
// that what it returns are HMAC-SHA256-sized signatures found in it.
func FuzzParseSignatures(f *testing.F) {
	for _, seed := range []string{specSignature, specSignature + " " + specSignature, "v1,", ",", " ", "v1a,x v1,!!", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sigs, err := webhook.ParseSignatures(header)
		if err != nil {
			require.ErrorIs(t, err, webhook.ErrNoSignature)
			require.Empty(t, sigs)
			return
		}
		require.NotEmpty(t, sigs)
		require.LessOrEqual(t, len(sigs), strings.Count(header, "v1,"))
		for _, s := range sigs {
			require.Len(t, s, 32)
		}
	})
}

func TestLoadOrCreateSecretFile_CreatesOnceThenKeeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "webhook.secret")
	first, created, err := webhook.LoadOrCreateSecretFile(path)
	require.NoError(t, err)
	require.True(t, created)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, created, err := webhook.LoadOrCreateSecretFile(path)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first, again)

	require.NoError(t, os.WriteFile(path, []byte("not a secret\n"), 0o600))
	_, _, err = webhook.LoadOrCreateSecretFile(path)
	require.ErrorContains(t, err, "starts with whsec_")
}
