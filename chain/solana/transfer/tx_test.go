package transfer

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	sol "github.com/gagliardetto/solana-go"
	ata "github.com/gagliardetto/solana-go/programs/associated-token-account"
	"github.com/gagliardetto/solana-go/programs/system"
)

// The transactions written out here are byte for byte what solana-go builds and signs for the
// same transfers (a SOL transfer; an SPL TransferChecked after the recipient's token account's
// creation), and the associated token addresses are the ones it derives.
func TestTransactionsMatchSolanaGo(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	var from, to, mint PublicKey
	copy(from[:], priv[32:])
	rand.Read(to[:])
	rand.Read(mint[:])
	var hash [32]byte
	rand.Read(hash[:])
	sf, st, sm := sol.PublicKeyFromBytes(from[:]), sol.PublicKeyFromBytes(to[:]), sol.PublicKeyFromBytes(mint[:])
	for range 20 {
		var owner PublicKey
		rand.Read(owner[:])
		got, err := associatedTokenAddress(owner, mint)
		want, _, werr := sol.FindAssociatedTokenAddress(sol.PublicKeyFromBytes(owner[:]), sm)
		if err != nil || werr != nil || got.String() != want.String() {
			t.Fatalf("associated token address %s, solana-go %s (%v %v)", got, want, err, werr)
		}
	}
	src, _ := associatedTokenAddress(from, mint)
	dst, _ := associatedTokenAddress(to, mint)
	create := ata.NewCreateInstruction(sf, st, sm).Build()
	cases := map[string]struct {
		mine   []Instruction
		theirs []sol.Instruction
	}{
		"SOL": {[]Instruction{systemTransfer(1_234_567, from, to)}, []sol.Instruction{system.NewTransferInstruction(1_234_567, sf, st).Build()}},
		"SPL with its account's creation": {
			[]Instruction{createTokenAccount(from, dst, to, mint), transferChecked(42, 6, src, mint, dst, from)},
			[]sol.Instruction{sol.NewInstruction(create.ProgramID(), create.Accounts(), []byte{1}),
				sol.NewInstruction(sol.TokenProgramID, sol.AccountMetaSlice{sol.Meta(sol.PublicKeyFromBytes(src[:])).WRITE(), sol.Meta(sm),
					sol.Meta(sol.PublicKeyFromBytes(dst[:])).WRITE(), sol.Meta(sf).SIGNER()}, []byte{12, 42, 0, 0, 0, 0, 0, 0, 0, 6})},
		},
	}
	for name, c := range cases {
		msg, err := compile(c.mine, from, hash)
		if err != nil {
			t.Fatal(err)
		}
		raw, sig := signTransaction(msg, priv)
		tx, err := sol.NewTransaction(c.theirs, sol.Hash(hash), sol.TransactionPayer(sf))
		if err != nil {
			t.Fatal(err)
		}
		key := sol.PrivateKey(priv)
		sigs, err := tx.Sign(func(sol.PublicKey) *sol.PrivateKey { return &key })
		if err != nil {
			t.Fatal(err)
		}
		want, _ := tx.MarshalBinary()
		if !bytes.Equal(raw, want) || !bytes.Equal(sig, sigs[0][:]) {
			t.Fatalf("%s: the transaction differs from solana-go's\n mine   %x\n theirs %x", name, raw, want)
		}
	}
}
