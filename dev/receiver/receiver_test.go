package receiver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/dev/receiver"
	"chargeonce/internal/syncbuf"
	"chargeonce/internal/webhook"
)

const event = `{"id":"evt_0123456789abcdef0123456789abcdef","type":"payment.succeeded","timestamp":"2026-12-02T06:00:00Z",` +
	`"data":{"orderId":1001,"sequence":2,"orderStatus":"paid","payment":{"idempotencyKey":"k","status":"succeeded","amount":"548.90","currency":"TRY","providerPaymentId":"ch_1"}}}`

func secret(t *testing.T) webhook.Secret {
	t.Helper()
	s, err := webhook.ParseSecret(webhook.NewSecret())
	require.NoError(t, err)
	return s
}

// post sends body to the receiver, signed with the secrets.
func post(t *testing.T, url, body string, secrets ...webhook.Secret) int {
	t.Helper()
	return postSigned(t, url, body, body, secrets...)
}

// postSigned sends body with the signatures of signed.
func postSigned(t *testing.T, url, body, signed string, secrets ...webhook.Secret) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+receiver.Path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	webhook.Sign(req.Header, "evt_0123456789abcdef0123456789abcdef", time.Now(), []byte(signed), secrets...)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

func TestReceiver_PrintsAVerifiedEventAndMarksItsRetry(t *testing.T) {
	current, other := secret(t), secret(t)
	var live atomic.Pointer[[]webhook.Secret]
	live.Store(&[]webhook.Secret{current})
	out := &syncbuf.Buffer{}
	h, err := receiver.New(receiver.Config{Out: out, Secrets: func(context.Context) ([]webhook.Secret, error) { return *live.Load(), nil }})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	require.Equal(t, http.StatusNoContent, post(t, srv.URL, event, current))
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, event, other, current), "one signature of a live secret is enough")
	require.Equal(t, http.StatusUnauthorized, post(t, srv.URL, event, other))
	require.Equal(t, http.StatusUnauthorized, postSigned(t, srv.URL, event[:len(event)-3]+"9}}}", event, current), "a changed body")

	// A rotation shows at the next event.
	live.Store(&[]webhook.Secret{other})
	require.Equal(t, http.StatusNoContent, post(t, srv.URL, event, other))
	require.Equal(t, http.StatusBadRequest, post(t, srv.URL, `{"id": 7}`, other))

	require.Equal(t, "event payment.succeeded order=1001 seq=2 status=paid evt_0123456789abcdef0123456789abcdef\n"+
		"event payment.succeeded order=1001 seq=2 status=paid evt_0123456789abcdef0123456789abcdef (again: a retry or a replay)\n"+
		"event refused: webhook: no signature matches any secret (webhook-id \"evt_0123456789abcdef0123456789abcdef\")\n"+
		"event refused: webhook: no signature matches any secret (webhook-id \"evt_0123456789abcdef0123456789abcdef\")\n"+
		"event payment.succeeded order=1001 seq=2 status=paid evt_0123456789abcdef0123456789abcdef (again: a retry or a replay)\n"+
		"event refused: the body is not an event: json: cannot unmarshal number into Go struct field Event.id of type string\n",
		out.String())
}
