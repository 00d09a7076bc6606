package demo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net"
	"testing"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/partners/demo"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

// The demo partner answers a call the service signed, over TLS on an in-memory connection,
// and refuses one signed by another key: it verifies, it does not just echo.
func TestDemoPartnerVerifiesWhatItAnswers(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	p, err := demo.Start(signing.NewVerifierFromKey(pub), false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	listing := demo.Listing()
	call := func(key ed25519.PrivateKey) (*outbound.Result, error) {
		c, err := outbound.New(outbound.Options{Signer: signing.NewSigner(key), ExtraCAPEM: p.CAPEM(),
			InProcess: map[string]func(context.Context) (net.Conn, error){demo.Host: p.Dial}})
		if err != nil {
			t.Fatal(err)
		}
		return c.Call(context.Background(), outbound.Target{Endpoint: listing.ToolEndpoint},
			signing.CallFields{RequestID: "req-1", IntentDefinitionID: "intent-1", UserID: "user-1", Args: json.RawMessage(`{"query":"hello"}`)})
	}
	res, err := call(priv)
	if err != nil || !res.OK() {
		t.Fatalf("a signed call: %+v %v", res, err)
	}
	if res, err := call(other); err == nil && res.OK() {
		t.Fatalf("a call signed by another key was answered: %+v", res)
	}
	if listing.PublicIdentifier != demo.Handle {
		t.Fatalf("listing handle %q", listing.PublicIdentifier)
	}
}
