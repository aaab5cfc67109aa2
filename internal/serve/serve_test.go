package serve_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/dev/devcert"
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

// writePair issues a server certificate for 127.0.0.1 from a new CA and
// writes it into dir; it returns the files and the CA's pool.
func writePair(t *testing.T, dir string) (certFile, keyFile string, ca *devcert.CA) {
	t.Helper()
	ca, err := devcert.NewCA("test CA")
	require.NoError(t, err)
	pair, err := ca.Server("api", "127.0.0.1")
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "api.pem"), filepath.Join(dir, "api-key.pem")
	require.NoError(t, pair.Write(certFile, keyFile))
	return certFile, keyFile, ca
}

func TestStartTLS_ServesHTTPSToAClientThatTrustsTheCA(t *testing.T) {
	certFile, keyFile, ca := writePair(t, t.TempDir())
	cfg, err := serve.LoadTLS(certFile, keyFile)
	require.NoError(t, err)
	ln, err := serve.Listen("127.0.0.1:0", "listen")
	require.NoError(t, err)
	s := serve.StartTLS(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}), cfg)
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	require.True(t, strings.HasPrefix(s.URL(), "https://"), s.URL())

	trusting := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: true,
	}}
	resp, err := trusting.Get(s.URL())
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "HTTP/2.0", string(body))
	require.NotNil(t, resp.TLS)

	// A client that does not trust the CA is refused at the handshake, and
	// a plain HTTP request gets no page.
	_, err = http.Get(s.URL())
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	resp, err = http.Get("http://" + s.Addr())
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestLoadTLS_BadFilesAreNamed(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writePair(t, dir)
	_, otherKey, _ := writePair(t, t.TempDir())
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))

	for name, tc := range map[string]struct {
		cert, key string
		want      []string
	}{
		"missing certificate": {filepath.Join(dir, "absent.pem"), keyFile, []string{"absent.pem", "no such file"}},
		"not PEM":             {notPEM, keyFile, []string{"not.pem", "failed to find any PEM data"}},
		"key of another cert": {certFile, otherKey, []string{certFile, "private key does not match public key"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := serve.LoadTLS(tc.cert, tc.key)
			for _, want := range tc.want {
				require.ErrorContains(t, err, want)
			}
		})
	}
}

func TestLoadTLS_ExpiredCertificateIsRefused(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "api"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "old.pem"), filepath.Join(dir, "old-key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))

	_, err = serve.LoadTLS(certFile, keyFile)
	require.ErrorContains(t, err, "TLS certificate "+certFile+" is valid from ")
}
