package outbound_test

import (
	"context"
	"errors"
	"net/netip"
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

// The guard applies the port rule to every endpoint it checks (partner endpoints, webhook
// receivers, each dial), before any lookup; a development server takes any port.
func TestCheckURLTakesTheEndpointPortsOnly(t *testing.T) {
	dns := &fakeDNS{first: map[string][]netip.Addr{"partner.example": addrs("2001:db8::1")}}
	g := &outbound.Guard{Resolver: dns}
	for raw, ok := range map[string]bool{
		"https://partner.example/tool":      true,
		"https://partner.example:8443/tool": true,
		"https://partner.example:8080/tool": false,
		"https://partner.example:25/tool":   false,
	} {
		_, err := g.CheckURL(context.Background(), raw)
		var ue *outbound.URLError
		if ok && err != nil && !outbound.IsBlocked(err) || !ok && !(errors.As(err, &ue) && strings.Contains(ue.Reason, "is not allowed; endpoints take port 443")) {
			t.Errorf("%s: %v", raw, err)
		}
	}
	dev := &outbound.Guard{AllowLocal: true, Resolver: dns}
	if _, err := dev.CheckURL(context.Background(), "http://127.0.0.1:8080/tool"); err != nil {
		t.Errorf("development server refused a local port: %v", err)
	}
}
