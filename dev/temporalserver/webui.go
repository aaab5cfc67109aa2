package temporalserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"

	"chargeonce/internal/temporalclient"
)

// webUIConfig is what the Web UI needs to know.
type webUIConfig struct {
	host, frontend, namespace, codecEndpoint string
	port                                     int
}

// webUI is a running Temporal Web UI.
type webUI struct {
	address string
	server  *uiserver.Server
	done    chan error
}

// startWebUI starts serving the Web UI, whose assets are compiled into the
// ui-server module.
func startWebUI(cfg webUIConfig) *webUI {
	bindHost := cfg.host
	if ip := net.ParseIP(bindHost); ip.To4() == nil {
		// The UI server joins host and port without brackets.
		bindHost = "[" + bindHost + "]"
	}
	srv := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: cfg.frontend,
		Host:                bindHost,
		Port:                cfg.port,
		EnableUI:            true,
		DefaultNamespace:    cfg.namespace,
		Codec:               uiconfig.Codec{Endpoint: cfg.codecEndpoint},
		// The UI is served over plain HTTP, where browsers drop cookies
		// marked Secure, and with them the CSRF token every write needs.
		CORS: uiconfig.CORS{CookieInsecure: true},
		// The development stack must work offline and keep its log readable.
		DisableNewsFetch: true,
		HideLogs:         true,
	}))
	ui := &webUI{
		address: "http://" + net.JoinHostPort(dialHost(cfg.host), strconv.Itoa(cfg.port)),
		server:  srv,
		done:    make(chan error, 1),
	}
	// The UI server's Start blocks until Stop. It exits the process if it
	// cannot bind, which reservePorts rules out by holding the port until
	// just before.
	go func() { ui.done <- srv.Start() }()
	return ui
}

// waitReady returns once the UI answers its health check.
func (u *webUI) waitReady(ctx context.Context) error {
	httpClient := &http.Client{} // each probe is bounded by its context
	return temporalclient.WaitFor(ctx, "web UI at "+u.address, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.address+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health check answered %s", resp.Status)
		}
		return nil
	})
}

// stop closes the UI's listener and waits for its server to return.
func (u *webUI) stop() error {
	u.server.Stop()
	if err := <-u.done; err != nil {
		return fmt.Errorf("temporalserver: web UI: %w", err)
	}
	return nil
}
