// Package serve runs the HTTP servers of chargeonce's processes the same way
// everywhere: a listener whose "address in use" error names the flag that
// moves it, HTTPS from certificate files when they are given, timeouts
// against slow clients, and a graceful shutdown that lets requests in
// progress finish.
package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ShutdownGrace is how long a server waits for requests in progress when it
// is stopped. A checkout request waits up to its budget, so this is longer.
const ShutdownGrace = 15 * time.Second

// Listen opens a TCP listener on addr. When the port is taken, the error says
// which flag chooses another one.
func Listen(addr, flagName string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("address %s is already in use: stop what is using it, or choose another with --%s", addr, flagName)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--%s): %w", addr, flagName, err)
	}
	return ln, nil
}

// LoadTLS reads a server's certificate chain and its private key from PEM
// files, for StartTLS. It checks them at startup, so that a missing,
// unreadable, mismatched or expired file stops the process with an error
// that names the file, rather than failing every handshake later.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("TLS certificate %s: %w", certFile, err)
		}
	}
	if now := time.Now(); now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("TLS certificate %s is valid from %s to %s only", certFile,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// Server is an HTTP server started on a listener.
type Server struct {
	srv     *http.Server
	addr    string
	scheme  string
	stopped chan struct{}
	err     error // why serving stopped; set before stopped is closed
}

// Start serves h on ln in the background, in plain HTTP.
func Start(ln net.Listener, h http.Handler) *Server { return StartTLS(ln, h, nil) }

// StartTLS serves h on ln in the background: HTTPS with the certificate of
// cfg (LoadTLS), or plain HTTP when cfg is nil.
func StartTLS(ln net.Listener, h http.Handler, cfg *tls.Config) *Server {
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			TLSConfig:         cfg,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		addr:    ln.Addr().String(),
		scheme:  "http",
		stopped: make(chan struct{}),
	}
	listen := s.srv.Serve
	if cfg != nil {
		s.scheme = "https"
		// The certificate is in cfg already; ServeTLS adds HTTP/2.
		listen = func(ln net.Listener) error { return s.srv.ServeTLS(ln, "", "") }
	}
	go func() {
		err := listen(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
		close(s.stopped)
	}()
	return s
}

// Stopped is closed when the server stops serving: after Shutdown, or on its
// own when its listener fails. Shutdown then reports the failure.
func (s *Server) Stopped() <-chan struct{} { return s.stopped }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// URL is the server's base URL, "http://host:port" or "https://host:port".
func (s *Server) URL() string { return s.scheme + "://" + s.addr }

// Shutdown stops accepting connections and waits, at most until ctx ends,
// for requests in progress; then it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		// Requests still running when the grace period ends are cut off;
		// the payment workflow keeps going without them.
		_ = s.srv.Close()
	}
	<-s.stopped
	if s.err != nil {
		return s.err
	}
	return err
}

// Run serves h on ln until ctx ends, then shuts down within ShutdownGrace:
// over HTTPS with the certificate of cfg, or plain HTTP when cfg is nil.
// It returns early with the error if the server fails.
func Run(ctx context.Context, ln net.Listener, h http.Handler, cfg *tls.Config) error {
	s := StartTLS(ln, h, cfg)
	select {
	case <-s.stopped:
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	return s.Shutdown(shutdownCtx)
}
