package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"chargeonce/store"
)

// NewHTTPClient is the client that sends events: it connects only to the
// addresses allowed allows (AllowedNetworks.CheckAddr), as its dialer
// checks each address it is about to connect to, after the name was
// resolved; and it follows no redirect, since a receiver that moved says
// so by its answer, and a Location could point anywhere.
//
// It uses no proxy, whatever the environment says: a proxy would connect
// on the dispatcher's behalf, out of reach of the dialer's check.
func NewHTTPClient(allows AllowedNetworks) *http.Client {
	dialer := &net.Dialer{
		Timeout:   Timeout,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			return allows.CheckAddr(ap.Addr())
		},
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = dialer.DialContext
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// classify is the class of a try's transport error, as the delivery log
// shows it; the error itself, with its addresses, goes to the worker's log
// only.
func classify(err error) store.DeliveryFailure {
	var (
		refused   *RefusedAddressError
		dns       *net.DNSError
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		record    tls.RecordHeaderError
		hostname  x509.HostnameError
		authority x509.UnknownAuthorityError
		netErr    net.Error
	)
	switch {
	case errors.As(err, &refused):
		return store.FailureRefusedAddress
	case errors.As(err, &dns):
		return store.FailureDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return store.FailureTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return store.FailureConnectionRefused
	case errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &record),
		errors.As(err, &hostname), errors.As(err, &authority):
		return store.FailureTLS
	default:
		return store.FailureConnection
	}
}
