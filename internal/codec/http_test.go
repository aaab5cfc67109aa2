package codec_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"chargeonce/internal/codec"
)

const (
	uiOrigin = "http://127.0.0.1:8233"
	token    = "Zm9yIHRoZSBjb2RlYyB0ZXN0cyBvbmx5IQ"
)

func newCodecServer(t *testing.T, ring string) *httptest.Server {
	t.Helper()
	tok, err := codec.ParseToken(token)
	require.NoError(t, err)
	srv := httptest.NewServer(codec.NewHTTPHandler(mustParse(t, ring), tok, uiOrigin))
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, method, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(data)
}

func TestHTTPHandler_ServesTheSDKRemoteCodec(t *testing.T) {
	srv := newCodecServer(t, keyEntry("k1", 1))
	local := codec.NewCodec(mustParse(t, keyEntry("k1", 1)))
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: srv.URL,
		Client:   http.Client{Timeout: 5 * time.Second},
		// As the Temporal CLI sends it with --codec-auth.
		ModifyRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		},
	})
	original := jsonPayload(t, "tok_amex_0005")

	decoded, err := remote.Decode([]*commonpb.Payload{encodeOne(t, local, original)})
	require.NoError(t, err)
	require.True(t, proto.Equal(original, decoded[0]), "decoded %v", decoded[0])

	encoded, err := remote.Encode([]*commonpb.Payload{original})
	require.NoError(t, err)
	decoded, err = local.Decode(encoded)
	require.NoError(t, err)
	require.True(t, proto.Equal(original, decoded[0]))

	foreign := encodeOne(t, codec.NewCodec(mustParse(t, keyEntry("k9", 9))), original)
	_, err = remote.Decode([]*commonpb.Payload{foreign})
	require.ErrorContains(t, err, `encrypted with key "k9", which is not in the keyring`)
}

func TestHTTPHandler_DecodesForTheWebUIOrigin(t *testing.T) {
	srv := newCodecServer(t, keyEntry("k1", 1))
	sealed := encodeOne(t, codec.NewCodec(mustParse(t, keyEntry("k1", 1))), jsonPayload(t, "shown in the UI"))
	b64 := base64.StdEncoding.EncodeToString
	// The body as the Web UI builds it in the browser.
	body := `{"payloads":[{"metadata":{"encoding":"` + b64([]byte(codec.MetadataEncodingEncrypted)) +
		`","encryption-key-id":"` + b64([]byte("k1")) + `"},"data":"` + b64(sealed.GetData()) + `"}]}`

	// The UI's codec endpoint carries the token as its last path segment.
	resp, got := send(t, http.MethodPost, srv.URL+"/"+token+"/decode", body, map[string]string{
		"Origin":       uiOrigin,
		"Content-Type": "application/json",
		"X-Namespace":  "default",
	})
	require.Equal(t, http.StatusOK, resp.StatusCode, got)
	require.Equal(t, uiOrigin, resp.Header.Get("Access-Control-Allow-Origin"))

	var payloads commonpb.Payloads
	require.NoError(t, protojson.Unmarshal([]byte(got), &payloads))
	require.Len(t, payloads.GetPayloads(), 1)
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payloads.GetPayloads()[0], &s))
	require.Equal(t, "shown in the UI", s)
}

func TestHTTPHandler_AnswersCORSPreflight(t *testing.T) {
	srv := newCodecServer(t, keyEntry("k1", 1))
	resp, _ := send(t, http.MethodOptions, srv.URL+"/decode", "", map[string]string{
		"Origin":                         uiOrigin,
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type,x-namespace",
	})
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, uiOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST, OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Authorization, Content-Type, X-Namespace", resp.Header.Get("Access-Control-Allow-Headers"))
	require.Equal(t, "Origin", resp.Header.Get("Vary"))
}

func TestHTTPHandler_RejectsBadRequests(t *testing.T) {
	srv := newCodecServer(t, keyEntry("k1", 1))
	valid := `{"payloads":[]}`
	bearer := map[string]string{"Authorization": "Bearer " + token}
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		header     map[string]string
		wantStatus int
	}{
		{"POST without the token", http.MethodPost, "/decode", valid, nil, http.StatusUnauthorized},
		{"POST with another token", http.MethodPost, "/decode", valid, map[string]string{"Authorization": "Bearer " + strings.ToUpper(token)}, http.StatusUnauthorized},
		{"POST with the token under another scheme", http.MethodPost, "/decode", valid, map[string]string{"Authorization": "Basic " + token}, http.StatusUnauthorized},
		{"POST with another path token", http.MethodPost, "/" + strings.ToUpper(token) + "/decode", valid, nil, http.StatusUnauthorized},
		{"POST with a wrong header and the right path token", http.MethodPost, "/" + token + "/decode", valid, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"encode without the token", http.MethodPost, "/encode", valid, nil, http.StatusUnauthorized},
		{"POST from another origin", http.MethodPost, "/decode", valid, map[string]string{"Origin": "http://evil.example", "Authorization": "Bearer " + token}, http.StatusForbidden},
		{"preflight from another origin", http.MethodOptions, "/decode", "", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"GET", http.MethodGet, "/decode", "", nil, http.StatusMethodNotAllowed},
		{"malformed JSON", http.MethodPost, "/decode", `{"payloads":`, bearer, http.StatusBadRequest},
		{"encrypted payload without data", http.MethodPost, "/decode",
			`{"payloads":[{"metadata":{"encoding":"` + base64.StdEncoding.EncodeToString([]byte(codec.MetadataEncodingEncrypted)) +
				`","encryption-key-id":"` + base64.StdEncoding.EncodeToString([]byte("k1")) + `"}}]}`, bearer, http.StatusBadRequest},
		{"body over the limit", http.MethodPost, "/decode", strings.Repeat(" ", 8<<20+1), bearer, http.StatusRequestEntityTooLarge},
		{"unknown operation", http.MethodPost, "/reveal", valid, bearer, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := send(t, tt.method, srv.URL+tt.path, tt.body, tt.header)
			require.Equal(t, tt.wantStatus, resp.StatusCode, body)
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		})
	}
}

func TestParseToken_RefusesShortOrUnsafeTokens(t *testing.T) {
	_, err := codec.ParseToken("short")
	require.ErrorContains(t, err, "at least 32 characters, this one 5")
	_, err = codec.ParseToken(strings.Repeat("a", 31) + "/")
	require.ErrorContains(t, err, "only the characters")
	_, err = codec.ParseToken(codec.NewToken())
	require.NoError(t, err)
}
