package codec_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"chargeonce/internal/codec"
)

func TestParseKeyring_ReadsCurrentKeyFirst(t *testing.T) {
	k := mustParse(t, " "+keyEntry("k2", 2)+" , "+keyEntry("k1", 1)+"\n")
	require.Equal(t, "k2", k.CurrentKeyID())
	require.Equal(t, []string{"k2", "k1"}, k.KeyIDs())
}

func TestParseKeyring_RejectsBadInput(t *testing.T) {
	// 0xfb 0xff encodes to '+' and '/' in standard base64, '-' and '_' in URL-safe base64.
	awkwardKey := bytes.Repeat([]byte{0xfb, 0xff}, codec.KeySize/2)
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	long := base64.StdEncoding.EncodeToString(make([]byte, 33))

	tests := []struct {
		name    string
		input   string
		wantErr string
	}{
		{"empty", "", "keyring is empty"},
		{"blank", "  \n", "keyring is empty"},
		{"no separator", "k1", "keyring entry 1 is not of the form id:base64-key"},
		{"empty id", ":" + base64.StdEncoding.EncodeToString(testKey(1)), "keyring entry 1: key id is empty"},
		{"id with a space", "k 1:" + base64.StdEncoding.EncodeToString(testKey(1)), `key id "k 1" may contain only letters`},
		{"id too long", strings.Repeat("a", 65) + ":" + base64.StdEncoding.EncodeToString(testKey(1)), "longer than 64 characters"},
		{"not base64", "k1:not*base64", `keyring entry 1 (key "k1"): key is not valid standard base64`},
		{"URL-safe base64", "k1:" + base64.URLEncoding.EncodeToString(awkwardKey), "not valid standard base64"},
		{"unpadded base64", "k1:" + base64.RawStdEncoding.EncodeToString(testKey(1)), "not valid standard base64"},
		{"empty key", "k1:", `key "k1" is 0 bytes; AES-256 needs exactly 32`},
		{"16-byte key", "k1:" + short, `key "k1" is 16 bytes; AES-256 needs exactly 32`},
		{"33-byte key", "k1:" + long, `key "k1" is 33 bytes; AES-256 needs exactly 32`},
		{"duplicate id", keyEntry("k1", 1) + "," + keyEntry("k1", 2), `keyring entry 2: key id "k1" appears twice`},
		{"trailing comma", keyEntry("k1", 1) + ",", "keyring entry 2 is not of the form"},
		{"empty middle entry", keyEntry("k1", 1) + ",," + keyEntry("k2", 2), "keyring entry 2 is not of the form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := codec.ParseKeyring(tt.input)
			require.Nil(t, k)
			require.ErrorContains(t, err, tt.wantErr)
			for _, secret := range []string{short, long, base64.StdEncoding.EncodeToString(testKey(1))} {
				require.NotContains(t, err.Error(), secret, "errors must not echo key material")
			}
		})
	}
}

func TestNewKeyring_ValidatesKeys(t *testing.T) {
	tests := []struct {
		name    string
		current string
		keys    map[string][]byte
		wantErr string
	}{
		{"current missing", "k3", map[string][]byte{"k1": testKey(1)}, `current key "k3" is not among the keys`},
		{"no keys", "k1", nil, `current key "k1" is not among the keys`},
		{"short old key", "k1", map[string][]byte{"k1": testKey(1), "k0": make([]byte, 31)}, `key "k0" is 31 bytes`},
		{"bad id", "k1", map[string][]byte{"k1": testKey(1), "k,0": testKey(2)}, `key id "k,0" may contain only`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := codec.NewKeyring(tt.current, tt.keys)
			require.Nil(t, k)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	k, err := codec.NewKeyring("k2", map[string][]byte{"k2": testKey(2), "k1": testKey(1), "k0": testKey(0)})
	require.NoError(t, err)
	require.Equal(t, []string{"k2", "k0", "k1"}, k.KeyIDs())
}

func TestKeyring_PrintsKeyIDsOnly(t *testing.T) {
	k := mustParse(t, keyEntry("k2", 2)+","+keyEntry("k1", 1))
	const want = "codec.Keyring{current: k2, keys: k2,k1}"
	require.Equal(t, want, fmt.Sprintf("%v", k))
	require.Equal(t, want, fmt.Sprintf("%+v", k))
	require.Equal(t, want, fmt.Sprintf("%#v", k))

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).Info("loaded", "keyring", k)
	require.JSONEq(t, `{"level":"INFO","msg":"loaded","keyring":{"current":"k2","keys":["k2","k1"]}}`, buf.String())
}

func TestLoadOrCreateKeyFile_CreatesOnceThenLoads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "codec.keys")

	created, isNew, err := codec.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.True(t, isNew)
	require.Regexp(t, `^local-[0-9a-f]{8}$`, created.CurrentKeyID())
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	loaded, isNew, err := codec.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.False(t, isNew)
	require.Equal(t, created.KeyIDs(), loaded.KeyIDs())

	// Same key material: what one encrypted, the other decrypts.
	sealed := encodeOne(t, codec.NewCodec(created), jsonPayload(t, "kept across restarts"))
	_, err = codec.NewCodec(loaded).Decode([]*commonpb.Payload{sealed})
	require.NoError(t, err)

	// The file holds the same form as the environment variable.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	fromEnvForm := mustParse(t, string(data))
	require.Equal(t, created.KeyIDs(), fromEnvForm.KeyIDs())
}

func TestLoadOrCreateKeyFile_RefusesUnsafeOrBrokenFiles(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		wantErr string
	}{
		{"readable by others", keyEntry("k1", 1), 0o644, "has mode 0644; it must be readable by its owner only (chmod 600)"},
		{"readable by group", keyEntry("k1", 1), 0o640, "has mode 0640"},
		{"not a keyring", "garbage", 0o600, "keyring entry 1 is not of the form id:base64-key (in key file "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "codec.keys")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), tt.mode))
			require.NoError(t, os.Chmod(path, tt.mode)) // not subject to the umask

			k, created, err := codec.LoadOrCreateKeyFile(path)
			require.Nil(t, k)
			require.False(t, created)
			require.ErrorContains(t, err, tt.wantErr)

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tt.content, string(data), "a refused key file must be left as it was")
		})
	}
}
