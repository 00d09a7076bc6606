package outbound_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// Endpoints take port 443 (written or not) and 8443; any other port is refused, saying which
// ports are taken.
func TestCheckPortTakes443And8443Only(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example/events":       true,
		"https://hooks.example:443/events":   true,
		"https://hooks.example:8443/events":  true,
		"https://hooks.example:8080/events":  false,
		"https://hooks.example:22/events":    false,
		"https://[2001:db8::1]:6379/events":  false,
		"https://[2001:db8::1]:8443/events":  true,
		"https://hooks.example:44300/events": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		err = outbound.CheckPort(u)
		if ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "port "+u.Port()+" is not allowed; endpoints take port 443") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
