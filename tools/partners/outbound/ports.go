package outbound

import (
	"fmt"
	"net/url"
)

// CheckPort refuses an endpoint URL whose port is neither 443 (the https default, also when
// none is written) nor 8443: the ports a public receiver of Switchboard's traffic listens
// on, which keeps the guard's public addresses from reaching any other service on them.
// Development (AllowLocal) skips it, with the rest of the guard.
func CheckPort(u *url.URL) error {
	switch u.Port() {
	case "", "443", "8443":
		return nil
	}
	return &URLError{fmt.Sprintf("port %s is not allowed; endpoints take port 443 (the https default: write no port) or 8443", u.Port())}
}
