package serve_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/serve"
)

func TestListen_BusyPortNamesTheFlag(t *testing.T) {
	first, err := serve.Listen("127.0.0.1:0", "api-addr")
	require.NoError(t, err)
	defer first.Close()

	_, err = serve.Listen(first.Addr().String(), "api-addr")
	require.ErrorContains(t, err, "is already in use")
	require.ErrorContains(t, err, "--api-addr")
}

func TestShutdown_LetsRequestsInProgressFinish(t *testing.T) {
	ln, err := serve.Listen("127.0.0.1:0", "addr")
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	s := serve.Start(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	}))

	type reply struct {
		body string
		err  error
	}
	replies := make(chan reply, 1)
	go func() {
		resp, err := http.Get(s.URL())
		if err != nil {
			replies <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		replies <- reply{string(b), err}
	}()
	<-entered

	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown <- s.Shutdown(ctx)
	}()
	close(release)

	r := <-replies
	require.NoError(t, r.err)
	require.Equal(t, "done", r.body)
	require.NoError(t, <-shutdown)
}

func TestServer_StoppedWhenItsListenerFails(t *testing.T) {
	ln, err := serve.Listen("127.0.0.1:0", "addr")
	require.NoError(t, err)
	s := serve.Start(ln, http.NotFoundHandler())

	require.NoError(t, ln.Close())

	select {
	case <-s.Stopped():
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the server did not stop when its listener closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.ErrorContains(t, s.Shutdown(ctx), "use of closed network connection")
}
