package transfer

import (
	"errors"
	"fmt"
)

// Programs a proposal's instructions are decoded for, beyond those a transfer calls.
const (
	computeBudgetProgram = "ComputeBudget111111111111111111111111111111"
	token2022Program     = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
)

// legacyMessage is a legacy Solana message as read from its bytes. It is read here rather
// than with solana-go so that serve does not link solana-go (its package state costs the
// idle budget; see chain/solana/transfer/tx.go).
type legacyMessage struct {
	Header          [3]byte // required signatures, read-only signed, read-only unsigned
	AccountKeys     []PublicKey
	RecentBlockhash PublicKey
	Instructions    []compiledInstruction
}

type compiledInstruction struct {
	ProgramIDIndex uint8
	Accounts       []uint8
	Data           []byte
}

// parse reads b whole: every length in its shortest form and no byte left over, so the
// message read is exactly the bytes the wallet signs.
func (m *legacyMessage) parse(b []byte) error {
	r := reader{b: b}
	copy(m.Header[:], r.take(3))
	n := r.length()
	for i := 0; i < n && r.err == nil; i++ {
		m.AccountKeys = append(m.AccountKeys, PublicKey(r.take(32)))
	}
	m.RecentBlockhash = PublicKey(r.take(32))
	n = r.length()
	for i := 0; i < n && r.err == nil; i++ {
		var ci compiledInstruction
		if idx := r.take(1); idx != nil {
			ci.ProgramIDIndex = idx[0]
		}
		ci.Accounts = append([]uint8(nil), r.take(r.length())...)
		ci.Data = append([]byte(nil), r.take(r.length())...)
		m.Instructions = append(m.Instructions, ci)
	}
	if r.err != nil {
		return r.err
	}
	if r.at != len(b) {
		return fmt.Errorf("%d bytes after its last instruction", len(b)-r.at)
	}
	return nil
}

// reader takes a message's fields in order; the first shortfall sticks in err and every
// later take answers nil.
type reader struct {
	b   []byte
	at  int
	err error
}

var errShort = errors.New("it ends before its fields do")

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.at {
		r.err = errShort
		return nil
	}
	out := r.b[r.at : r.at+n]
	r.at += n
	return out
}

// length is a compact-u16, refused unless in its shortest form (a longer one would read back
// to other bytes).
func (r *reader) length() int {
	if r.err != nil {
		return 0
	}
	n, used, err := shortvec(r.b[r.at:])
	if err != nil {
		r.err = err
		return 0
	}
	if len(appendLength(nil, n)) != used {
		r.err = errors.New("a length not in its shortest form")
		return 0
	}
	r.at += used
	return n
}
