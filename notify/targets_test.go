package notify_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/notify"
	"chargeonce/store"
)

// TestAllowedNetworks_CheckAddrRefusesEveryAddressThatIsNotPublic: the
// address rule, form by form.
func TestAllowedNetworks_CheckAddrRefusesEveryAddressThatIsNotPublic(t *testing.T) {
	refused := map[string]string{
		"0.0.0.0":                   `"this network"`,
		"0.1.2.3":                   `"this network"`,
		"10.0.0.1":                  "private",
		"172.16.0.1":                "private",
		"172.31.255.255":            "private",
		"192.168.1.1":               "private",
		"100.64.0.1":                "shared (CGNAT)",
		"100.127.255.254":           "shared (CGNAT)",
		"127.0.0.1":                 "loopback",
		"127.255.255.254":           "loopback",
		"169.254.169.254":           "link-local",
		"192.0.0.8":                 "IETF protocol assignment",
		"192.0.2.1":                 "documentation",
		"198.18.0.1":                "benchmarking",
		"198.19.255.255":            "benchmarking",
		"198.51.100.1":              "documentation",
		"203.0.113.7":               "documentation",
		"224.0.0.1":                 "multicast",
		"239.255.255.250":           "multicast",
		"240.0.0.1":                 "reserved",
		"255.255.255.255":           "reserved",
		"::":                        "unspecified or IPv4-compatible",
		"::1":                       "loopback",
		"::ffff:169.254.169.254":    "link-local",
		"::ffff:127.0.0.1":          "loopback",
		"::ffff:10.0.0.1":           "private",
		"::127.0.0.1":               "unspecified or IPv4-compatible",
		"::8.8.8.8":                 "unspecified or IPv4-compatible",
		"64:ff9b::a9fe:a9fe":        "NAT64 of a link-local",
		"64:ff9b::7f00:1":           "NAT64 of a loopback",
		"64:ff9b:1::1":              "local NAT64",
		"2002:7f00:1::1":            "6to4 of a loopback",
		"2002:a00:1::":              "6to4 of a private",
		"2001:0:4136:e378::1":       "IETF protocol assignment",
		"2001:db8::1":               "documentation",
		"fc00::1":                   "unique-local",
		"fd12:3456:789a::1":         "unique-local",
		"fe80::1":                   "link-local",
		"fe80::1%eth0":              "scoped",
		"fec0::1":                   "site-local",
		"ff02::1":                   "multicast",
		"100::1":                    "discard-only",
		"::ffff:255.255.255.255":    "reserved",
		"::ffff:100.64.0.1":         "shared (CGNAT)",
		"::ffff:0.0.0.0":            `"this network"`,
		"64:ff9b::c0a8:101":         "NAT64 of a private",
		"2002:c0a8:101::1":          "6to4 of a private",
		"::ffff:198.18.0.1":         "benchmarking",
		"::ffff:224.0.0.251":        "multicast",
		"::ffff:192.0.0.170":        "IETF protocol assignment",
		"::ffff:240.0.0.0":          "reserved",
		"2001:db8:85a3::8a2e:370:1": "documentation",
	}
	for raw, why := range refused {
		var err *notify.RefusedAddressError
		require.ErrorAs(t, notify.AllowedNetworks(nil).CheckAddr(netip.MustParseAddr(raw)), &err, raw)
		require.Equal(t, why, err.Why, raw)
	}
	for _, raw := range []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0", "172.32.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:82a::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"} {
		require.NoError(t, notify.AllowedNetworks(nil).CheckAddr(netip.MustParseAddr(raw)), raw)
	}

	allows, err := notify.ParseAllowedNetworks("10.20.0.0/16, fd00::/8")
	require.NoError(t, err)
	for _, raw := range []string{"10.20.3.4", "::ffff:10.20.3.4", "fd00::1", "8.8.8.8"} {
		require.NoError(t, allows.CheckAddr(netip.MustParseAddr(raw)), raw)
	}
	for _, raw := range []string{"10.21.0.1", "127.0.0.1", "169.254.169.254", "fc00::1"} {
		require.Error(t, allows.CheckAddr(netip.MustParseAddr(raw)), raw)
	}
	require.NoError(t, notify.LoopbackNetworks.CheckAddr(netip.MustParseAddr("127.0.0.1")))
	require.NoError(t, notify.LoopbackNetworks.CheckAddr(netip.MustParseAddr("::1")))
	require.Error(t, notify.LoopbackNetworks.CheckAddr(netip.MustParseAddr("10.0.0.1")))
}

// TestAllowedNetworks_CheckURLRefusesInternalHostsAndOtherSpellings: the
// hosts of the URLs that reached the inside of the network.
func TestAllowedNetworks_CheckURLRefusesInternalHostsAndOtherSpellings(t *testing.T) {
	check := func(allows notify.AllowedNetworks, raw string) error {
		u, err := url.Parse(raw)
		require.NoError(t, err, raw)
		return allows.CheckURL(u)
	}
	for _, raw := range []string{
		"https://169.254.169.254/", "https://10.0.0.1/", "https://127.0.0.1:8443/", "https://0.0.0.0:8443/",
		"https://[::ffff:169.254.169.254]/", "https://[::1]/", "https://[fe80::1%25eth0]/", "https://localhost/",
		"https://app.localhost/", "http://localhost:8097/events", "http://127.0.0.1:8097/events",
	} {
		var refused *notify.RefusedAddressError
		require.ErrorAs(t, check(nil, raw), &refused, raw)
	}
	for _, raw := range []string{
		"https://2130706433/", "https://0177.0.0.1/", "https://0x7f.0.0.1/", "https://0x7f000001/", "https://127.1/",
		"https://127.0.0.01/", "https://127.0.0.1./", "https://shop.example.1/", "https://8.8.8.010/",
	} {
		require.ErrorIs(t, check(notify.LoopbackNetworks, raw), notify.ErrNonCanonicalIPv4, raw)
	}
	for _, raw := range []string{"http://shop.example/hooks", "http://10.0.0.1/hooks", "ftp://shop.example/"} {
		err := check(notify.AllowedNetworks{netip.MustParsePrefix("10.0.0.0/8")}, raw)
		require.Error(t, err, raw)
		require.NotErrorAs(t, err, new(*notify.RefusedAddressError), raw)
	}
	for _, raw := range []string{
		"https://shop.example/chargeonce-events", "https://8.8.8.8/hooks", "https://[2606:4700:4700::1111]/",
		"https://127.0.0.1.nip.io/", "https://0x7f.example/", "https://1.example/",
	} {
		require.NoError(t, check(nil, raw), "%s: a public address, or a name that the dialer judges", raw)
	}
	for _, raw := range []string{"http://localhost:8097/events", "http://127.0.0.1:8097/events", "http://[::1]:8097/events", "https://127.8.9.10/"} {
		require.NoError(t, check(notify.LoopbackNetworks, raw), raw)
	}
}

func TestParseAllowedNetworks_ReadsCIDRsWrittenAsTheirNetwork(t *testing.T) {
	list, err := notify.ParseAllowedNetworks(" 127.0.0.0/8,::1/128 ")
	require.NoError(t, err)
	require.Equal(t, notify.LoopbackNetworks, list)
	require.Equal(t, "127.0.0.0/8,::1/128", list.String())
	list, err = notify.ParseAllowedNetworks("")
	require.NoError(t, err)
	require.Empty(t, list)
	for raw, want := range map[string]string{
		"10.0.0.1/8":     `"10.0.0.1/8" is not a network's CIDR: write it 10.0.0.0/8`,
		"10.0.0.0":       `"10.0.0.0" is not a CIDR`,
		"10.0.0.0/8,":    `"" is not a CIDR`,
		"shop.example/8": `"shop.example/8" is not a CIDR`,
	} {
		_, err := notify.ParseAllowedNetworks(raw)
		require.ErrorContains(t, err, want, raw)
	}
}

// TestClassify_NamesTheFailureWithoutItsDetail: the errors no local test
// can provoke (a resolver's failure, a deadline) have their class too.
func TestClassify_NamesTheFailureWithoutItsDetail(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Post", URL: "https://shop.example/", Err: err} }
	for want, err := range map[store.DeliveryFailure]error{
		store.FailureDNS:               wrap(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "shop.example", Server: "10.0.0.2:53", IsNotFound: true}}),
		store.FailureTimeout:           wrap(context.DeadlineExceeded),
		store.FailureConnectionRefused: wrap(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}),
		store.FailureTLS:               wrap(tls.AlertError(40)),
		store.FailureRefusedAddress:    wrap(&net.OpError{Op: "dial", Err: &notify.RefusedAddressError{Addr: netip.MustParseAddr("10.0.0.1"), Why: "private"}}),
		store.FailureConnection:        wrap(errors.New("EOF")),
	} {
		require.Equal(t, want, notify.Classify(err), "%v", err)
	}
}
