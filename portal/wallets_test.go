package portal_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

var (
	exportedRe = regexp.MustCompile(`<pre id="key-(\d)">([^<]+)</pre>`)
	addrRe     = regexp.MustCompile(`<th scope="row">(EVM|Solana) wallet</th><td><code class="addr">([^<]+)</code>`)
)

// A signed-in human exports the wallets' private keys after a fresh e-mail code: the EVM key
// (hex) and the Solana keypair (base58, 64 bytes) each yield the account's address and sign
// for it; the export is recorded; the other session is told once at its next page load; a
// wrong or used code reveals nothing; the keys are never logged.
func TestWalletExport(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			logs := &logBuffer{}
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Log: logs})
			const email = "owner@example.com"
			h := newHuman(t, env)
			h.signIn(email)
			addrs := map[string]string{}
			for _, m := range addrRe.FindAllStringSubmatch(h.last, -1) {
				addrs[m[1]] = m[2]
			}
			other := newHuman(t, env)
			other.signIn(email)

			if _, body := h.get("/developer/settings/wallet-export"); !strings.Contains(body, "Anyone with a private key can take every fund") || exportedRe.MatchString(body) {
				t.Fatalf("export page before the code:\n%s", body)
			}
			token := h.csrf()
			if st, body := h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"send"}}, false); st != 200 || !strings.Contains(body, `name="code"`) {
				t.Fatalf("send code: %d %s", st, body)
			}
			msgs := env.Inbox.Messages()
			if last := msgs[len(msgs)-1]; !strings.Contains(last.Text, "wallet export page") || strings.Contains(last.Text, "agent_verify") {
				t.Fatalf("the export code e-mail: %s", last.Text)
			}
			if st, body := h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"reveal"}, "code": {"00000000"}}, false); st != 422 || exportedRe.MatchString(body) || !strings.Contains(body, `id="code-error"`) {
				t.Fatalf("a wrong code: %d %s", st, body)
			}
			code := env.Inbox.Code(t, email, 3) // two sign-ins, then the export
			env.Clock.Advance(time.Second)
			st, body := h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"reveal"}, "code": {code}}, false)
			keys := exportedRe.FindAllStringSubmatch(body, -1)
			if st != 200 || len(keys) != 2 || !strings.Contains(body, "Shown only now") {
				t.Fatalf("reveal: %d %s", st, body)
			}
			for _, k := range keys {
				switch {
				case strings.Contains(body, `<h3>EVM wallet</h3>`) && len(k[2]) == 64:
					priv, err := crypto.HexToECDSA(k[2])
					if err != nil {
						t.Fatal(err)
					}
					if got := crypto.PubkeyToAddress(priv.PublicKey).Hex(); got != addrs["EVM"] {
						t.Errorf("the exported EVM key is of %s, the account's wallet is %s", got, addrs["EVM"])
					}
					digest := crypto.Keccak256([]byte("self-custody"))
					sig, _ := crypto.Sign(digest, priv)
					if pub, err := crypto.SigToPub(digest, sig); err != nil || crypto.PubkeyToAddress(*pub).Hex() != addrs["EVM"] {
						t.Errorf("a signature by the exported EVM key does not recover the wallet: %v", err)
					}
				default:
					raw, err := base58.Decode(k[2])
					if err != nil || len(raw) != ed25519.PrivateKeySize {
						t.Fatalf("the Solana keypair is not base58 of 64 bytes: %d %v", len(raw), err)
					}
					pair := ed25519.PrivateKey(raw)
					pub := pair.Public().(ed25519.PublicKey)
					if base58.Encode(pub) != addrs["Solana"] || base58.Encode(raw[32:]) != addrs["Solana"] {
						t.Errorf("the exported Solana keypair is of %s, the account's wallet is %s", base58.Encode(pub), addrs["Solana"])
					}
					msg := sha256.Sum256([]byte("self-custody"))
					addrKey, _ := base58.Decode(addrs["Solana"])
					if !ed25519.Verify(addrKey, msg[:], ed25519.Sign(pair, msg[:])) {
						t.Error("a signature by the exported Solana keypair does not verify for the wallet")
					}
				}
				if strings.Contains(logs.String(), k[2]) {
					t.Error("an exported key is in the logs")
				}
			}

			// The code is used: the same form again reveals nothing.
			if st, body := h.post("/developer/settings/wallet-export", url.Values{"csrf": {token}, "action": {"reveal"}, "code": {code}}, false); st != 422 || exportedRe.MatchString(body) {
				t.Fatalf("a used code: %d", st)
			}
			evs, err := sessions.New(env.App.Store).AccountEvents(t.Context(), accountIDOf(t, h))
			if err != nil || len(evs) != 1 || evs[0].Kind != sessions.EventWalletExported || !strings.Contains(evs[0].Detail, addrs["EVM"]) || !strings.Contains(evs[0].Detail, addrs["Solana"]) {
				t.Fatalf("the account event: %v %+v", err, evs)
			}
			env.Clock.Advance(time.Second)
			if _, body := h.get("/developer"); strings.Contains(body, `class="notice"`) {
				t.Error("the exporting session is told about its own export")
			}
			if _, body := other.get("/developer/api-keys"); !strings.Contains(body, `<p class="notice" role="alert">Your wallets&#39; private keys were exported from another session`) {
				t.Errorf("the other session is not told:\n%s", body)
			}
			if _, body := other.get("/developer/api-keys"); strings.Contains(body, `class="notice"`) {
				t.Error("the notice is shown twice to the same session")
			}
		})
	}
}

func accountIDOf(t *testing.T, h *human) string {
	t.Helper()
	_, body := h.get("/developer")
	m := regexp.MustCompile(`User id</th><td><code>([^<]+)</code>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no user id on the account page")
	}
	return m[1]
}
