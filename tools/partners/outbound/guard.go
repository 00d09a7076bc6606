// Package outbound is Switchboard's one way out to partner endpoints: an HTTP client with
// verified TLS (plus an optional extra CA), no redirects, capped response bodies, a
// per-request timeout and an SSRF guard in its dialer; signed calls over REST and MCP_HTTP
// (through package signing); and the negative-auth probe. Publishing, the endpoint test and
// dispatch all go through it.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names to addresses; *net.Resolver satisfies it. Tests inject their
// own to make a name resolve to loopback or a private address.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// BlockedError says an endpoint's host is or resolves to an address partners may not use.
type BlockedError struct {
	Host   string
	Addr   netip.Addr
	Reason string // e.g. "loopback", "private", "cloud metadata service"
}

func (e *BlockedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, a %s address; partner endpoints must resolve only to public addresses", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is a %s address; partner endpoints must resolve only to public addresses", e.Addr, e.Reason)
}

// IsBlocked reports whether err comes from the SSRF guard.
func IsBlocked(err error) bool {
	var b *BlockedError
	return errors.As(err, &b)
}

// URLError says an endpoint URL is unusable (scheme, host, form) before any resolution.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// Guard keeps partner traffic off loopback, private, link-local, CGNAT, metadata and other
// non-public addresses, at publish (CheckURL) and at every dial (DialContext), because DNS
// answers can change between the two. AllowLocal (development only) turns it off and
// permits http URLs.
type Guard struct {
	AllowLocal bool
	Resolver   Resolver // nil means net.DefaultResolver
	// DialTimeout bounds connecting (default 10 s); the request context bounds it too.
	DialTimeout time.Duration
	// InProcess are hosts served inside this process (the test environment's demo partner),
	// by exact host name: dialed through their function, never resolved. Nothing else is
	// let through, so they open no local address to anyone.
	InProcess map[string]func(ctx context.Context) (net.Conn, error)
}

// inProcess is the dialer of a host served inside this process, or nil.
func (g *Guard) inProcess(host string) func(ctx context.Context) (net.Conn, error) {
	return g.InProcess[strings.ToLower(strings.TrimSuffix(host, "."))]
}

func (g *Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// MaxURLLength bounds endpoint URLs.
const MaxURLLength = 2048

// CheckURL parses an endpoint URL and checks it: absolute https (http too with
// AllowLocal), a host, port 443 or 8443 (any with AllowLocal), no user info or fragment,
// and — unless AllowLocal — a host that resolves only to public addresses. Errors are *URLError, *BlockedError, or *ResolveError.
func (g *Guard) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > MaxURLLength {
		return nil, &URLError{fmt.Sprintf("the URL is longer than %d characters", MaxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &URLError{"not a valid URL: " + err.Error()}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowLocal:
	case u.Scheme == "http":
		return nil, &URLError{"partner endpoints must use https (http is allowed only on a development server with SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS)"}
	default:
		return nil, &URLError{fmt.Sprintf("scheme %q is not allowed; use an https:// URL", u.Scheme)}
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, &URLError{"the URL has no host; use the form https://host/path"}
	}
	if u.User != nil {
		return nil, &URLError{"the URL must not carry user info (user:password@); partners authenticate Switchboard by its signature"}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, &URLError{"the URL must not have a #fragment"}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, &URLError{fmt.Sprintf("port %q is not a valid port", p)}
		}
	}
	if !g.AllowLocal {
		if err := CheckPort(u); err != nil {
			return nil, err
		}
	}
	// The in-process host is dialled on 443 alone (DialContext): another port resolves, and is
	// refused, like any other name.
	if inProcess := g.inProcess(u.Hostname()) != nil && (u.Port() == "" || u.Port() == "443"); !g.AllowLocal && !inProcess {
		if _, err := g.Resolve(ctx, u.Hostname()); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// Resolve returns host's addresses if every one of them is allowed; an IP literal stands
// for itself. One disallowed address refuses the host (*BlockedError): a name that answers
// with both a public and a private address is not a public endpoint.
func (g *Guard) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "."), "["), "]")
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if a, ok := inetAton(host); ok {
		// 127.1, 2130706433, 0x7f000001, 0177.0.0.1: C resolvers read these as addresses, so
		// they never reach DNS here and are refused whatever they denote.
		return nil, &URLError{fmt.Sprintf("%q is a numeric address in a non-standard form (it means %s); write addresses as four decimal parts, a.b.c.d", host, a)}
	} else {
		addrs, err = g.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, resolveError(host, err)
		}
		if len(addrs) == 0 {
			return nil, resolveError(host, errors.New("no addresses"))
		}
	}
	if g.AllowLocal {
		return addrs, nil
	}
	for _, a := range addrs {
		if reason := Disallowed(a); reason != "" {
			return nil, &BlockedError{Host: host, Addr: a, Reason: reason}
		}
	}
	return addrs, nil
}

// DialContext is the dialer of the partner transport: it resolves through the guard and
// connects only to allowed addresses, and checks the connected socket's address again.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if dial := g.inProcess(host); dial != nil && port == "443" {
		return dial(ctx)
	}
	addrs, err := g.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	timeout := g.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !g.AllowLocal {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s: %w", address, err)
			}
			if reason := Disallowed(ap.Addr()); reason != "" {
				return &BlockedError{Host: host, Addr: ap.Addr(), Reason: reason}
			}
			return nil
		}
	}
	var errs []error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// inetAton parses host the way C's inet_aton does: one to four parts separated by dots, each
// decimal, octal (leading 0) or hexadecimal (0x), the last part filling the remaining bytes.
// ok is false for anything else, including names.
func inetAton(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 || host == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" {
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n |= v << (8 * (3 - i))
	}
	if last := vals[len(vals)-1]; last < 1<<(8*(5-len(vals))) {
		n |= last
	} else {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

type blockedRange struct {
	prefix netip.Prefix
	reason string
}

func ranges(reason string, cidrs ...string) []blockedRange {
	out := make([]blockedRange, len(cidrs))
	for i, c := range cidrs {
		out[i] = blockedRange{netip.MustParsePrefix(c), reason}
	}
	return out
}

// metadata are cloud metadata endpoints, named specially because they are the classic
// SSRF target (they are inside link-local, CGNAT or ULA ranges anyway).
var metadata = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, ...
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IPv6
}

var blocked4 = concat(
	ranges("unspecified (this network)", "0.0.0.0/8"),
	ranges("private", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	ranges("carrier-grade NAT (shared)", "100.64.0.0/10"),
	ranges("loopback", "127.0.0.0/8"),
	ranges("link-local", "169.254.0.0/16"),
	ranges("IETF protocol assignment", "192.0.0.0/24"),
	ranges("documentation", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"),
	ranges("6to4 relay", "192.88.99.0/24"),
	ranges("benchmarking", "198.18.0.0/15"),
	ranges("multicast", "224.0.0.0/4"),
	ranges("reserved", "240.0.0.0/4"),
)

var blocked6 = concat(
	ranges("unspecified", "::/128"),
	ranges("loopback", "::1/128"),
	ranges("discard-only", "100::/64"),
	ranges("local-use NAT64", "64:ff9b:1::/48"),
	ranges("IETF protocol assignment (Teredo, ...)", "2001::/23"),
	ranges("documentation", "2001:db8::/32", "3fff::/20"),
	ranges("unique local (IPv6 private)", "fc00::/7"),
	ranges("link-local", "fe80::/10"),
	ranges("site-local", "fec0::/10"),
	ranges("multicast", "ff00::/8"),
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

func concat(xs ...[]blockedRange) []blockedRange {
	var out []blockedRange
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// Disallowed returns why a may not be a partner address ("" when it is a public address).
// IPv4-mapped, NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address they carry.
func Disallowed(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	if a.Zone() != "" {
		return "scoped (zone) IPv6"
	}
	a = a.Unmap()
	if metadata[a] {
		return "cloud metadata service"
	}
	if a.Is4() {
		for _, r := range blocked4 {
			if r.prefix.Contains(a) {
				return r.reason
			}
		}
		return ""
	}
	if nat64.Contains(a) {
		b := a.As16()
		return Disallowed(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(a) {
		b := a.As16()
		return Disallowed(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, r := range blocked6 {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	if !globalUnicast6.Contains(a) {
		return "not global unicast"
	}
	return ""
}
