package notify

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Where events may be sent. An endpoint's URL is chosen by whoever holds
// the operator scope, and the dispatcher connects to it from inside the
// service's network; without this rule the endpoint API would reach the
// cloud's metadata service, the database, or any port of the network.
// The rule is checked when an endpoint is registered (CheckURL, by the
// API) and on every connection the dispatcher opens (CheckAddr, from the
// dialer's Control hook), so that a name that resolves to an internal
// address, DNS rebinding included, is refused too.

// AllowedNetworks lists the internal networks that a deployment delivers
// events to on purpose, such as its own receiver on loopback in
// development: an address in one of them is allowed although it is not
// public. Production allows none. As a flag it reads a comma-separated
// list of CIDRs; an empty value allows none.
type AllowedNetworks []netip.Prefix

// LoopbackNetworks allows the loopback networks only: the dev stack's
// receiver listens there.
var LoopbackNetworks = AllowedNetworks{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// String implements flag.Value.
func (n *AllowedNetworks) String() string {
	if n == nil {
		return ""
	}
	parts := make([]string, len(*n))
	for i, p := range *n {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// Set implements flag.Value: s, a comma-separated list of CIDRs each
// written as its network ("10.20.0.0/16", not "10.20.1.2/16"), replaces
// the list.
func (n *AllowedNetworks) Set(s string) error {
	list, err := ParseAllowedNetworks(s)
	if err != nil {
		return err
	}
	*n = list
	return nil
}

// ParseAllowedNetworks reads a comma-separated list of CIDRs, as the flag
// does; empty is none.
func ParseAllowedNetworks(s string) (AllowedNetworks, error) {
	list := AllowedNetworks{}
	if strings.TrimSpace(s) == "" {
		return list, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.20.0.0/16 or fd00::/8", part)
		}
		if p != p.Masked() {
			return nil, fmt.Errorf("%q is not a network's CIDR: write it %s", part, p.Masked())
		}
		list = append(list, p)
	}
	return list, nil
}

// Allows reports whether a is in one of the allowed networks.
func (n AllowedNetworks) Allows(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range n {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// RefusedAddressError is an address that events may not be sent to.
type RefusedAddressError struct {
	Addr netip.Addr
	// Why names the kind of address, as "loopback".
	Why string
}

func (e *RefusedAddressError) Error() string {
	return fmt.Sprintf("%s is a %s address, which receives events only where the deployment allows its network", e.Addr, e.Why)
}

// CheckAddr refuses an address that is not public, unless n allows it.
func (n AllowedNetworks) CheckAddr(a netip.Addr) error {
	if n.Allows(a) {
		return nil
	}
	if why := internal(a); why != "" {
		return &RefusedAddressError{Addr: a, Why: why}
	}
	return nil
}

// ErrNonCanonicalIPv4 refuses a host that some resolvers read as an IPv4
// address although it is not written as four decimal numbers: 2130706433,
// 0177.0.0.1, 0x7f.1 and 127.1 all mean 127.0.0.1.
var ErrNonCanonicalIPv4 = errors.New("is an IPv4 address written in another form than four decimal numbers such as 192.0.2.1")

// CheckURL checks where an endpoint's URL sends events: https, or http
// to a loopback host only, since events carry payment data and their
// signature does not hide it; and a host that is a public address, a name,
// or an address n allows. A name is judged on each connection
// (CheckAddr), as it may resolve anywhere, except localhost, which is
// loopback by definition (RFC 6761).
func (n AllowedNetworks) CheckURL(u *url.URL) error {
	host := u.Hostname()
	addr, isAddr, err := hostAddr(host)
	if err != nil {
		return err
	}
	loopback := isAddr && addr.Unmap().IsLoopback() || isLocalhost(host)
	switch {
	case u.Scheme == "http" && !loopback:
		return fmt.Errorf("is http to %s, which is not a loopback host: events carry payment data, so the URL must be https, or http to localhost, 127.0.0.0/8 or [::1]", host)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("has the scheme %q: it must be https, or http to a loopback host", u.Scheme)
	case isAddr:
		if err := n.CheckAddr(addr); err != nil {
			return fmt.Errorf("is refused: %w", err)
		}
	case loopback && !n.Allows(netip.IPv6Loopback()) && !n.Allows(localhost4):
		return fmt.Errorf("is refused: %w", &RefusedAddressError{Addr: localhost4, Why: "loopback"})
	}
	return nil
}

// hostAddr reads a URL's host as an IP address when it is one; a host
// that only some resolvers read as one is refused (ErrNonCanonicalIPv4).
// As WHATWG URLs do, a host whose last label is a number is taken for an
// IPv4 address: no top-level domain is numeric.
func hostAddr(host string) (addr netip.Addr, ok bool, err error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, nil
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if isNumber(labels[len(labels)-1]) {
		return netip.Addr{}, false, fmt.Errorf("has the host %s, which %w", host, ErrNonCanonicalIPv4)
	}
	return netip.Addr{}, false, nil
}

// isNumber reports whether a host's label reads as a number to inet_aton:
// decimal or octal digits, or 0x and hexadecimal digits.
func isNumber(label string) bool {
	if rest, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// localhost4 is where localhost resolves in IPv4.
var localhost4 = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// isLocalhost reports whether host is localhost or a name under it, which
// resolve to loopback (RFC 6761, section 6.3).
func isLocalhost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// notPublic are the networks that are not globally reachable (the IANA
// special-purpose address registries), with what they are. An event to
// one of them would reach the service's own host or network, or nothing.
// The IPv6 forms that embed an IPv4 address are judged by that address
// (embedded); the deprecated IPv4-compatible form, ::/96, is refused
// whole.
var notPublic = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`}, // 0.0.0.0 reaches the local host
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"}, // the clouds' metadata services
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and 255.255.255.255, the broadcast
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "unspecified or IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment"}, // Teredo, 2001::/32, among them
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "segment routing"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// embedded are the IPv6 forms that carry an IPv4 address, and at which
// byte it starts: a translator or a tunnel delivers to that address.
var embedded = []struct {
	prefix netip.Prefix
	at     int
	why    string
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12, "NAT64"},
	{netip.MustParsePrefix("2002::/16"), 2, "6to4"},
}

// internal names the kind of a that is not public, "" when it is public.
func internal(a netip.Addr) string {
	if a.Zone() != "" {
		return "scoped" // a zone names a local interface
	}
	a = a.Unmap() // ::ffff:169.254.169.254 is 169.254.169.254
	for _, e := range embedded {
		if e.prefix.Contains(a) {
			b := a.As16()
			if why := internal(netip.AddrFrom4([4]byte(b[e.at : e.at+4]))); why != "" {
				return e.why + " of a " + why
			}
			return ""
		}
	}
	for _, r := range notPublic {
		if r.prefix.Contains(a) {
			return r.why
		}
	}
	return ""
}
