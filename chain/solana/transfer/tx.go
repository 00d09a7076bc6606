package transfer

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"filippo.io/edwards25519"
	"github.com/mr-tron/base58"
)

// A legacy Solana transaction, written out: the few instructions a wallet's own transfer takes
// (system Transfer, associated-token-account CreateIdempotent, SPL Token TransferChecked), the
// message compiled from them and signed by its one signer. solana-go does the same, but
// linking it costs serve megabytes of memory at start for its logging and encoding
// dependencies, whether or not anything is ever sent (TestServeMemory); the SVM tests check
// these bytes land (svmtest's harness builds its own with solana-go).

// PublicKey is a Solana account address.
type PublicKey [32]byte

// ParseKey reads a base58 address.
func ParseKey(s string) (PublicKey, error) {
	var k PublicKey
	b, err := base58.Decode(s)
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("%q is not a Solana address (32 bytes, base58)", s)
	}
	copy(k[:], b)
	return k, nil
}

func (k PublicKey) String() string { return base58.Encode(k[:]) }

// The programs a transfer calls.
const (
	systemProgram = "11111111111111111111111111111111"
	tokenProgram  = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	ataProgram    = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
)

func program(s string) PublicKey {
	k, err := ParseKey(s)
	if err != nil {
		panic(err) // the constants above are addresses
	}
	return k
}

// AccountMeta is an account an instruction reads or writes.
type AccountMeta struct {
	Key              PublicKey
	Signer, Writable bool
}

// Instruction is one call of a program.
type Instruction struct {
	Program  PublicKey
	Accounts []AccountMeta
	Data     []byte
}

// systemTransfer is the system program's Transfer (instruction 2: lamports u64 LE).
func systemTransfer(lamports uint64, from, to PublicKey) Instruction {
	data := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, 2), lamports)
	return Instruction{Program: program(systemProgram), Accounts: []AccountMeta{{Key: from, Signer: true, Writable: true}, {Key: to, Writable: true}}, Data: data}
}

// createTokenAccount is the associated-token-account program's CreateIdempotent (instruction
// 1): payer creates owner's account for mint at ata, and a recipient account made meanwhile
// does not fail it.
func createTokenAccount(payer, ata, owner, mint PublicKey) Instruction {
	return Instruction{Program: program(ataProgram), Accounts: []AccountMeta{
		{Key: payer, Signer: true, Writable: true}, {Key: ata, Writable: true}, {Key: owner}, {Key: mint},
		{Key: program(systemProgram)}, {Key: program(tokenProgram)},
	}, Data: []byte{1}}
}

// transferChecked is SPL Token's TransferChecked (instruction 12: amount u64 LE, decimals).
func transferChecked(amount uint64, decimals uint8, src, mint, dst, owner PublicKey) Instruction {
	data := binary.LittleEndian.AppendUint64([]byte{12}, amount)
	return Instruction{Program: program(tokenProgram), Accounts: []AccountMeta{
		{Key: src, Writable: true}, {Key: mint}, {Key: dst, Writable: true}, {Key: owner, Signer: true},
	}, Data: append(data, decimals)}
}

// associatedTokenAddress is owner's associated token account for mint: the program address
// of the associated-token-account program with seeds owner, the token program and mint.
func associatedTokenAddress(owner, mint PublicKey) (PublicKey, error) {
	tok := program(tokenProgram)
	return findProgramAddress([][]byte{owner[:], tok[:], mint[:]}, program(ataProgram))
}

// findProgramAddress is the first address off the ed25519 curve of seeds and a bump seed from
// 255 down, as the runtime derives it.
func findProgramAddress(seeds [][]byte, prog PublicKey) (PublicKey, error) {
	for bump := 255; bump >= 0; bump-- {
		h := sha256.New()
		for _, s := range seeds {
			h.Write(s)
		}
		h.Write([]byte{byte(bump)})
		h.Write(prog[:])
		h.Write([]byte("ProgramDerivedAddress"))
		var k PublicKey
		copy(k[:], h.Sum(nil))
		if _, err := new(edwards25519.Point).SetBytes(k[:]); err != nil { // off the curve: no private key
			return k, nil
		}
	}
	return PublicKey{}, errors.New("no program address for these seeds")
}

// compile is the legacy message of instructions paid by payer on blockhash: the accounts in
// order of first use with their flags merged, payer first, then signers (writable first), then
// the rest (writable first), programs among the read-only ones.
func compile(instructions []Instruction, payer PublicKey, blockhash [32]byte) ([]byte, error) {
	if len(instructions) == 0 {
		return nil, errors.New("a transaction needs an instruction")
	}
	var keys []AccountMeta
	at := map[PublicKey]int{}
	add := func(m AccountMeta) {
		if i, ok := at[m.Key]; ok {
			keys[i].Signer, keys[i].Writable = keys[i].Signer || m.Signer, keys[i].Writable || m.Writable
			return
		}
		at[m.Key] = len(keys)
		keys = append(keys, m)
	}
	add(AccountMeta{Key: payer, Signer: true, Writable: true})
	for _, in := range instructions {
		for _, m := range in.Accounts {
			add(m)
		}
	}
	for _, in := range instructions {
		add(AccountMeta{Key: in.Program})
	}
	rank := func(m AccountMeta) int {
		switch {
		case m.Key == payer:
			return 0
		case m.Signer && m.Writable:
			return 1
		case m.Signer:
			return 2
		case m.Writable:
			return 3
		}
		return 4
	}
	var ordered []AccountMeta
	for r := 0; r <= 4; r++ {
		for _, m := range keys {
			if rank(m) == r {
				ordered = append(ordered, m)
			}
		}
	}
	if len(ordered) > 255 {
		return nil, errors.New("too many accounts")
	}
	index := map[PublicKey]byte{}
	var header [3]byte // signatures, read-only signed, read-only unsigned
	for i, m := range ordered {
		index[m.Key] = byte(i)
		switch {
		case m.Signer:
			header[0]++
			if !m.Writable {
				header[1]++
			}
		case !m.Writable:
			header[2]++
		}
	}
	msg := append([]byte{}, header[:]...)
	msg = appendLength(msg, len(ordered))
	for _, m := range ordered {
		msg = append(msg, m.Key[:]...)
	}
	msg = append(msg, blockhash[:]...)
	msg = appendLength(msg, len(instructions))
	for _, in := range instructions {
		msg = append(msg, index[in.Program])
		msg = appendLength(msg, len(in.Accounts))
		for _, m := range in.Accounts {
			msg = append(msg, index[m.Key])
		}
		msg = appendLength(msg, len(in.Data))
		msg = append(msg, in.Data...)
	}
	return msg, nil
}

// appendLength is Solana's compact-u16 length.
func appendLength(b []byte, n int) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// signTransaction is the wire transaction of msg with its one signature by key, and that
// signature.
func signTransaction(msg []byte, key ed25519.PrivateKey) (raw, sig []byte) {
	sig = ed25519.Sign(key, msg)
	raw = appendLength(nil, 1)
	raw = append(raw, sig...)
	return append(raw, msg...), sig
}
