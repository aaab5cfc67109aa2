package temporalserver

import (
	"fmt"
	"net"
	"strconv"
)

// PortError reports a port the server could not bind. The development stack
// uses Role to tell the user which flag to change.
type PortError struct {
	// Role is "frontend" or "ui".
	Role string
	// Port is the port that was asked for.
	Port int
	// Address is the host:port that failed to bind.
	Address string
	// Err is the bind error.
	Err error
}

// Error implements error.
func (e *PortError) Error() string {
	return fmt.Sprintf("temporalserver: %s port %d is not available (%s): %v", e.Role, e.Port, e.Address, e.Err)
}

// Unwrap returns the bind error.
func (e *PortError) Unwrap() error { return e.Err }

// internalHost is where the history, matching and worker services listen.
// Only the in-process services talk to them.
const internalHost = "127.0.0.1"

// reservedPorts are the ports the services will bind. ui is zero when the Web
// UI is disabled.
type reservedPorts struct {
	frontend, ui                 int
	history, matching, sysworker int

	probes []net.Listener
}

// reservePorts checks that the requested ports are free and picks free ports
// for everything left to chance. Each port stays bound by a probe listener
// until release, so no two services are handed the same port and nothing
// else takes one while the database is being prepared.
//
// A process that grabs a port between release and the service binding it
// makes that start fail, with an error naming the address (see fatalError);
// it cannot make a service bind the wrong port. Start then tries again on
// new ports when it picked them all (see pickedPortTaken).
func reservePorts(cfg Config) (*reservedPorts, error) {
	ports := &reservedPorts{}
	probe := func(role, host string, port int) (int, error) {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return 0, &PortError{Role: role, Port: port, Address: addr, Err: err}
		}
		ports.probes = append(ports.probes, l)
		tcp, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return 0, fmt.Errorf("temporalserver: unexpected listener address %v", l.Addr())
		}
		return tcp.Port, nil
	}

	var err error
	if ports.frontend, err = probe("frontend", cfg.Host, cfg.FrontendPort); err != nil {
		ports.release()
		return nil, err
	}
	if cfg.UIPort >= 0 {
		if ports.ui, err = probe("ui", cfg.Host, cfg.UIPort); err != nil {
			ports.release()
			return nil, err
		}
	}
	for _, p := range []*int{&ports.history, &ports.matching, &ports.sysworker} {
		if *p, err = probe("internal", internalHost, 0); err != nil {
			ports.release()
			return nil, err
		}
	}
	return ports, nil
}

// release frees the ports for the services to bind. Calling it again does
// nothing.
func (r *reservedPorts) release() {
	for _, l := range r.probes {
		_ = l.Close()
	}
	r.probes = nil
}
