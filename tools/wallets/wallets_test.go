package wallets

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/mr-tron/base58"
)

// The EIP-55 test vectors from the EIP itself.
func TestChecksumAddressEIP55Vectors(t *testing.T) {
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		raw, _ := hex.DecodeString(want[2:])
		if got := ChecksumAddress(raw); got != want {
			t.Errorf("ChecksumAddress = %s, want %s", got, want)
		}
		if !ValidEVMAddress(want) {
			t.Errorf("ValidEVMAddress(%s) = false", want)
		}
	}
	if ValidEVMAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD") {
		t.Error("a wrong checksum was accepted")
	}
	if !ValidEVMAddress("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed") {
		t.Error("an all-lowercase address was refused")
	}
}

// Private key 1 has the well-known address 0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf.
func TestEVMAddressDerivation(t *testing.T) {
	priv := secp256k1.PrivKeyFromBytes(append(make([]byte, 31), 1))
	pub := priv.PubKey().SerializeUncompressed()
	if got := ChecksumAddress(keccak(pub[1:])[12:]); got != "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf" {
		t.Fatalf("address of key 1 = %s", got)
	}
	kp, err := NewEVM()
	if err != nil || !ValidEVMAddress(kp.Address) || len(kp.Private) != 32 {
		t.Fatalf("NewEVM: %+v %v", kp.Address, err)
	}
	back := secp256k1.PrivKeyFromBytes(kp.Private).PubKey().SerializeUncompressed()
	if ChecksumAddress(keccak(back[1:])[12:]) != kp.Address {
		t.Fatal("generated private key does not match its address")
	}
}

func TestSolanaAddress(t *testing.T) {
	kp, err := NewSolana()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := base58.Decode(kp.Address)
	if err != nil || len(pub) != 32 {
		t.Fatalf("address %s: %v", kp.Address, err)
	}
	if !bytes.Equal(ed25519.NewKeyFromSeed(kp.Private).Public().(ed25519.PublicKey), pub) {
		t.Fatal("seed does not match the address")
	}
	if !ValidSolanaAddress(kp.Address) || ValidSolanaAddress("0OIl") {
		t.Fatal("ValidSolanaAddress")
	}
}

func TestSealerRotation(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, _ := NewSealer(oldKey)
	sealed, id := old.Seal([]byte("secret"), []byte("addr"))
	rotated, err := NewSealer(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rotated.Open(sealed, id, []byte("addr"))
	if err != nil || string(got) != "secret" {
		t.Fatalf("open under rotated sealer: %q %v", got, err)
	}
	if _, err := rotated.Open(sealed, id, []byte("other")); err == nil {
		t.Fatal("a sealed key opened under another owner's aad")
	}
	if _, newID := rotated.Seal([]byte("x"), nil); newID != KeyID(newKey) {
		t.Fatal("rotated sealer does not seal under the new key")
	}
	onlyNew, _ := NewSealer(newKey)
	if _, err := onlyNew.Open(sealed, id, []byte("addr")); err == nil {
		t.Fatal("opened without the old key configured")
	}
	if bytes.Contains(sealed, []byte("secret")) {
		t.Fatal("plaintext visible in sealed bytes")
	}
}
