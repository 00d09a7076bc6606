package webhooks_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/partners/partnertest"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// What an owner reads of a failed attempt is a short summary of what went wrong, for each way
// a real receiver on loopback fails: never the Go or TLS error text, the dialled address or
// the deployment's resolver (which the test's resolver names in its error).
func TestDeliveryErrorsAreSummaries(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		trusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		trusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused by the client
		trusted.StartTLS()
		t.Cleanup(trusted.Close)
		// Every httptest server shares one certificate: this one has its own, self-signed.
		untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		untrusted.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
		untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
		untrusted.StartTLS()
		t.Cleanup(untrusted.Close)
		plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		t.Cleanup(plain.Close)
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		refused := closed.Addr().String()
		closed.Close()
		quiet := newSilent(t)
		const timeout = 500 * time.Millisecond
		w := newWorld(t, s, worldOptions{allowLocal: true, caPEM: partnertest.CAPEM(trusted), timeout: timeout})
		_, port, _ := net.SplitHostPort(trusted.Listener.Addr().String())
		want := map[string]string{
			trusted.URL + "/status":                                "the endpoint answered 503 Service Unavailable; only 2xx counts as delivered",
			untrusted.URL + "/untrusted":                           "TLS handshake failed: certificate not trusted (signed by an unknown authority, or self-signed)",
			"https://localhost:" + port + "/hostname":              "TLS handshake failed: the certificate is not valid for this host name",
			"https://" + plain.Listener.Addr().String() + "/plain": "TLS handshake failed: the endpoint does not speak TLS on this port",
			"https://" + refused + "/refused":                      "connection refused",
			quiet.URL():                                            "timed out after 500 ms without an answer",
			"https://nowhere.invalid/events":                       "the host does not resolve",
		}
		for url := range want {
			w.mustCall(w.root, "webhook_endpoint_create", map[string]any{"url": url})
		}
		w.mustCall(w.root, "api_key_create", map[string]any{"name": "k", "scopes": []string{"read"}})
		if r := w.run(); r.Attempts != len(want) {
			t.Fatalf("round %+v, want %d attempts", r, len(want))
		}
		page := w.mustCall(w.root, "webhook_delivery_list", map[string]any{"limit": 100}).(webhooks.ListDeliveriesOutput)
		if len(page.Deliveries) != len(want) {
			t.Fatalf("%d deliveries", len(page.Deliveries))
		}
		for _, d := range page.Deliveries {
			if len(d.Attempts) != 1 {
				t.Fatalf("%s: attempts %+v", d.URL, d.Attempts)
			}
			got := d.Attempts[0].Error
			if got != want[d.URL] {
				t.Errorf("%s: error %q, want %q", d.URL, got, want[d.URL])
			}
			for _, leak := range []string{"x509", "tls:", "dial tcp", "lookup", "10.0.0.2", "127.0.0.1", "context deadline"} {
				if strings.Contains(got, leak) {
					t.Errorf("%s: error %q names %q", d.URL, got, leak)
				}
			}
		}
	})
}

// selfSigned is a certificate for 127.0.0.1 that signs itself: no client trusts it.
func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
