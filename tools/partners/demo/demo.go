// Package demo is the partner a fresh test deployment offers so that discover → invoke works
// in its first minute: @demo_echo (and @demo_send where base has a node), the example partner (package signing's verifier, the
// spec's sample (a) schema) served inside the process. Calls to it are signed, verified and
// billed like any partner's; they travel over TLS on an in-memory connection, so the demo
// needs no local network address and the SSRF guard stays closed for everything else.
package demo

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/signing/partnerexample"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

const (
	// Handle is the demo intent's @handle.
	Handle = "@demo_echo"
	// Host is where the demo answers: a name under .invalid (RFC 6761), which no resolver
	// ever answers, so it can only be the in-process partner.
	Host = "demo.switchboard.invalid"
	// OwnerEmail is the demo partner's account.
	OwnerEmail = "demo-partner@switchboard.invalid"
)

// Listing is the demo intent: free of partner fees (a call costs the infrastructure fee and
// the platform's floor, in test credit), a QUERY that echoes its query.
func Listing() partners.IntentInput {
	var in partners.IntentInput
	raw := `{"publicIdentifier":"` + Handle + `","name":"Demo echo",
		"description":"Demo partner of this test deployment: echoes your query back, signed by Switchboard and verified by the partner. Try it first: discover demo, then invoke @demo_echo with a query.",
		"category":"QUERY","toolEndpoint":"https://` + Host + partnerexample.RESTPath + `","timeoutMs":5000,
		"parametersSchema":` + partnerexample.RESTParametersSchema + `,"feeRate":0,
		"sampleQueries":["echo hello","demo","test call"]}`
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		panic("demo listing: " + err.Error()) // a constant: caught by the package's tests
	}
	return in
}

// SendHandle is the demo write intent's @handle: it proposes an ERC-20 transfer that the
// caller's embedded wallet signs (the partner kit's write intent, partnerexample.NewSendHandler).
const SendHandle = partnerexample.SendHandle

// SendToken is what @demo_send proposes transfers of: USDC on base, at the registry's address.
var SendToken = partnerexample.Token{Chain: "base", Address: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", Symbol: "USDC", Decimals: 6}

// sendSchema is the kit's {to, amount} with the token and chain the demo proposes, marked so
// Switchboard resolves the token before dispatch as it does for every SEND intent.
const sendSchema = `{"type":"object","properties":{"to":{"type":"string","pattern":"^0x[0-9a-fA-F]{40}$"},"amount":{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?$"},` +
	`"token":{"type":"string","x-token":true,"enum":["USDC"]},"chain":{"type":"string","enum":["base"]}},"required":["to","amount","token","chain"],"additionalProperties":false}`

// SendListing is the demo write intent: a SEND that MUTATES_USER_FUNDS, free of partner fees,
// whose answer proposes a USDC transfer on base from the caller's embedded wallet.
func SendListing() partners.IntentInput {
	var in partners.IntentInput
	raw := `{"publicIdentifier":"` + SendHandle + `","name":"Demo send",
		"description":"Demo write intent of this test deployment: proposes a USDC transfer on base {to, amount}, which Switchboard simulates, shows you decoded, and signs with your embedded wallet once you confirm. The partner never holds your key.",
		"category":"SEND","capabilities":["MUTATES_USER_FUNDS"],"toolEndpoint":"https://` + Host + partnerexample.SendPath + `","timeoutMs":5000,
		"parametersSchema":` + sendSchema + `,"feeRate":0,
		"sampleQueries":["send 1 USDC to 0x...","demo send"]}`
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		panic("demo send listing: " + err.Error()) // a constant: caught by the package's tests
	}
	return in
}

// Partner is the demo partner's in-process TLS server.
type Partner struct {
	caPEM []byte
	ln    *pipeListener
	srv   *http.Server
	done  chan struct{}
}

// Start serves the example partner's REST handler, verifying with v, on an in-memory
// listener behind a certificate for Host made now (its key never leaves the process); with
// withSend, also the write intent's (SendListing).
func Start(v *signing.Verifier, withSend bool) (*Partner, error) {
	cert, caPEM, err := selfSigned(Host)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(partnerexample.RESTPath, partnerexample.NewRESTHandler(v))
	if withSend {
		mux.Handle(partnerexample.SendPath, partnerexample.NewSendHandler(v, SendToken, 0))
	}
	p := &Partner{caPEM: caPEM, ln: newPipeListener(), done: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	go func() {
		defer close(p.done)
		_ = p.srv.ServeTLS(p.ln, "", "")
	}()
	return p, nil
}

// CAPEM is the certificate the partner client must trust for Host.
func (p *Partner) CAPEM() []byte { return p.caPEM }

// Dial connects to the partner: the partner client's dialer for Host.
func (p *Partner) Dial(ctx context.Context) (net.Conn, error) { return p.ln.dial(ctx) }

// Close stops the partner.
func (p *Partner) Close() error {
	err := p.srv.Close()
	<-p.done
	return err
}

// pipeListener is a net.Listener whose connections are the server ends of net.Pipe pairs.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("the demo partner is stopped")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return Host + ":443" }

// selfSigned makes a certificate for host that is its own root.
func selfSigned(host string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
