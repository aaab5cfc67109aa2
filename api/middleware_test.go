package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/openapitest"
)

func TestRecoverPanics_AnswersA500ProblemAndLogsTheRequest(t *testing.T) {
	var logs bytes.Buffer
	s := &server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	srv := httptest.NewServer(openapitest.Handler(t, s.logRequests(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	})))))
	t.Cleanup(srv.Close)

	// The request a client with a key sends; no key is checked here.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/orders/7", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer ck_0123456789abcdef_"+strings.Repeat("0", 64))
	resp, err := (&http.Client{}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	require.Equal(t, "urn:chargeonce:problem:internal-error", p.Type)

	require.Regexp(t, `"level":"ERROR","msg":"handler panicked","alert":"handler_panic",.*"panic":"boom"`, logs.String())
	require.Contains(t, logs.String(), `"msg":"request","method":"GET","path":"/api/orders/7","status":500`)
}
