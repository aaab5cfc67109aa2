package fakeprovider

import (
	"context"
	"errors"
	"net"

	"chargeonce/internal/serve"
)

// Server is a fake provider serving HTTP on a listener. The fake provider
// command and the dev stack serve the fake with it, so that both stop it in
// the order its state needs.
type Server struct {
	provider *Provider
	http     *serve.Server
}

// Serve serves p on ln in the background. Shut the server down once: that
// closes p too.
func Serve(ln net.Listener, p *Provider) *Server {
	return &Server{provider: p, http: serve.Start(ln, p)}
}

// URL is the server's base URL, "http://host:port".
func (s *Server) URL() string { return s.http.URL() }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.http.Addr() }

// Stopped is closed when the server stops serving: after Shutdown, or on its
// own when its listener fails, which Shutdown then reports.
func (s *Server) Stopped() <-chan struct{} { return s.http.Stopped() }

// Shutdown stops the fake, waiting at most until ctx ends. The provider
// closes first: it refuses new charges, releases dropped requests that
// would otherwise keep the HTTP server's shutdown waiting, and drains the
// charges in progress, each written to the data file before its answer.
// The data file closes last, once the HTTP server has recorded the requests
// it was finishing.
func (s *Server) Shutdown(ctx context.Context) error {
	return errors.Join(s.provider.Close(ctx), s.http.Shutdown(ctx), s.provider.CloseDataFile())
}
