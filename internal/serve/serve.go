// Package serve runs the HTTP servers of chargeonce's processes the same way
// everywhere: a listener whose "address in use" error names the flag that
// moves it, timeouts against slow clients, and a graceful shutdown that lets
// requests in progress finish.
package serve

import (
	"context"
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

// Server is an HTTP server started on a listener.
type Server struct {
	srv     *http.Server
	addr    string
	stopped chan struct{}
	err     error // why serving stopped; set before stopped is closed
}

// Start serves h on ln in the background.
func Start(ln net.Listener, h http.Handler) *Server {
	s := &Server{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
		addr:    ln.Addr().String(),
		stopped: make(chan struct{}),
	}
	go func() {
		err := s.srv.Serve(ln)
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

// URL is the server's base URL, "http://host:port".
func (s *Server) URL() string { return "http://" + s.addr }

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

// Run serves h on ln until ctx ends, then shuts down within ShutdownGrace.
// It returns early with the error if the server fails.
func Run(ctx context.Context, ln net.Listener, h http.Handler) error {
	s := Start(ln, h)
	select {
	case <-s.stopped:
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	return s.Shutdown(shutdownCtx)
}
