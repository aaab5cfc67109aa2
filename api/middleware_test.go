package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecoverPanics_AnswersA500ProblemAndLogsTheRequest(t *testing.T) {
	var logs bytes.Buffer
	s := &server{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	srv := httptest.NewServer(s.logRequests(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))))
	t.Cleanup(srv.Close)

	resp, err := (&http.Client{}).Get(srv.URL + "/api/orders/7")
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
