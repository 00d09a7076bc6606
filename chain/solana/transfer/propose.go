package transfer

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/mr-tron/base58"
)

// A partner-proposed Solana transaction (issue 49 item 2): the partner builds the message with
// the wallet as its fee payer and only signer; Switchboard decodes what its instructions do,
// simulates it, and signs exactly those message bytes (never a message of its own making: a
// proposal whose blockhash expired is proposed again by the partner, not re-made here).

// Instruction effect kinds, named as chain/evm's are.
const (
	EffectNative   = "native"   // system Transfer: lamports out of an account
	EffectTransfer = "transfer" // SPL Token (or Token-2022) Transfer / TransferChecked
	EffectApprove  = "approve"  // SPL Token (or Token-2022) Approve / ApproveChecked
	EffectCall     = "call"     // anything else, named by its program id
)

// SPL Token instructions decoded (their first data byte).
const (
	tokenTransfer        = 3
	tokenApprove         = 4
	tokenTransferChecked = 12
	tokenApproveChecked  = 13
)

// ErrProposal is a proposed transaction Switchboard cannot take: malformed, versioned, not
// paid and signed by the wallet alone, or re-encoding to other bytes than it came as.
var ErrProposal = errors.New("the proposed transaction cannot be signed")

// Effect is what one instruction does, as decoded from it.
type Effect struct {
	Kind    string
	Program string
	// native: From pays Amount lamports to To. transfer: Amount units move from the token
	// account From to the token account To, by Authority. approve: Authority lets the
	// delegate To take Amount units of the token account From.
	From, To  string
	Authority string
	Mint      string // TransferChecked/ApproveChecked name it; ResolveMints fills it for the rest
	Amount    *big.Int
	Decimals  *uint8 // the Checked forms state them
	Unlimited bool   // an approval of u64's maximum
}

// Proposed is a partner's Solana transaction, parsed.
type Proposed struct {
	Raw       []byte // as the partner sent it
	Message   []byte // its message bytes: exactly what the wallet signs
	FeePayer  string
	Blockhash string
	Effects   []Effect // one per instruction, in order
	// FeeLamports is its fee: the base fee of its signature and the priority fee its compute
	// budget instructions set.
	FeeLamports uint64
	msg         legacyMessage
}

// ParseProposed reads a base64 transaction proposed for wallet: a legacy message whose fee
// payer is wallet and which needs no other signature.
func ParseProposed(b64, wallet string) (*Proposed, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %w", ErrProposal, err)
	}
	nsig, at, err := shortvec(raw)
	if err != nil || nsig < 1 || nsig > 16 || len(raw) < at+64*nsig+1 {
		return nil, fmt.Errorf("%w: malformed signatures", ErrProposal)
	}
	p := &Proposed{Raw: raw, Message: raw[at+64*nsig:]}
	if p.Message[0]&0x80 != 0 {
		return nil, fmt.Errorf("%w: a versioned message (only legacy transactions are taken)", ErrProposal)
	}
	if err := p.msg.parse(p.Message); err != nil {
		return nil, fmt.Errorf("%w: malformed message: %w", ErrProposal, err)
	}
	h := p.msg.Header
	if int(h[0]) != nsig || len(p.msg.AccountKeys) == 0 {
		return nil, fmt.Errorf("%w: %d signatures for %d signers", ErrProposal, nsig, h[0])
	}
	if h[0] != 1 {
		return nil, fmt.Errorf("%w: it needs %d signers; only the wallet may sign", ErrProposal, h[0])
	}
	p.FeePayer, p.Blockhash = p.msg.AccountKeys[0].String(), p.msg.RecentBlockhash.String()
	if p.FeePayer != wallet {
		return nil, fmt.Errorf("%w: its fee payer is %s, not the wallet %s", ErrProposal, p.FeePayer, wallet)
	}
	if p.Effects, p.FeeLamports, err = decodeInstructions(&p.msg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProposal, err)
	}
	return p, nil
}

func shortvec(b []byte) (n, at int, err error) {
	for shift := 0; at < len(b) && at < 3; shift += 7 {
		c := b[at]
		at++
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return n, at, nil
		}
	}
	return 0, 0, errors.New("malformed length")
}

// decodeInstructions reads every instruction's effect, and the fee its compute budget sets.
func decodeInstructions(m *legacyMessage) ([]Effect, uint64, error) {
	var out []Effect
	var price uint64 // micro-lamports per compute unit
	limit, others := uint64(0), uint64(0)
	for i, ci := range m.Instructions {
		if int(ci.ProgramIDIndex) >= len(m.AccountKeys) {
			return nil, 0, fmt.Errorf("instruction %d names no account as its program", i)
		}
		accts := make([]string, len(ci.Accounts))
		for j, a := range ci.Accounts {
			if int(a) >= len(m.AccountKeys) {
				return nil, 0, fmt.Errorf("instruction %d names account %d of %d", i, a, len(m.AccountKeys))
			}
			accts[j] = m.AccountKeys[a].String()
		}
		prog := m.AccountKeys[ci.ProgramIDIndex]
		data := ci.Data
		if prog == program(computeBudgetProgram) {
			switch {
			case len(data) == 5 && data[0] == 2: // SetComputeUnitLimit(u32)
				limit = uint64(binary.LittleEndian.Uint32(data[1:]))
			case len(data) == 9 && data[0] == 3: // SetComputeUnitPrice(u64)
				price = binary.LittleEndian.Uint64(data[1:])
			}
		} else {
			others++
		}
		out = append(out, decodeInstruction(prog, accts, data))
	}
	if limit == 0 {
		limit = min(others*200_000, 1_400_000) // the runtime's default per instruction
	}
	priority := new(big.Int).Mul(new(big.Int).SetUint64(price), new(big.Int).SetUint64(limit))
	priority.Add(priority, big.NewInt(999_999)).Div(priority, big.NewInt(1_000_000))
	if !priority.IsUint64() || priority.Uint64() > math.MaxUint64-LamportsPerSignature {
		return nil, 0, errors.New("its priority fee overflows")
	}
	return out, LamportsPerSignature + priority.Uint64(), nil
}

func decodeInstruction(prog PublicKey, accts []string, data []byte) Effect {
	e := Effect{Kind: EffectCall, Program: prog.String()}
	switch {
	case prog == program(systemProgram):
		// Transfer: u32 2, u64 lamports; accounts [from, to].
		if len(data) == 12 && binary.LittleEndian.Uint32(data) == 2 && len(accts) >= 2 {
			e.Kind, e.From, e.To = EffectNative, accts[0], accts[1]
			e.Amount = new(big.Int).SetUint64(binary.LittleEndian.Uint64(data[4:]))
		}
	case prog == program(tokenProgram), prog == program(token2022Program):
		decodeToken(&e, accts, data)
	}
	return e
}

// decodeToken reads SPL Token's transfers and approvals (the same layouts in Token-2022).
func decodeToken(e *Effect, accts []string, data []byte) {
	if len(data) < 9 {
		return
	}
	amount := new(big.Int).SetUint64(binary.LittleEndian.Uint64(data[1:9]))
	checked := func(n int) bool { return len(data) == 10 && len(accts) >= n }
	switch data[0] {
	case tokenTransfer, tokenApprove: // [source, destination|delegate, owner]
		if len(data) != 9 || len(accts) < 3 {
			return
		}
		e.From, e.To, e.Authority = accts[0], accts[1], accts[2]
	case tokenTransferChecked, tokenApproveChecked: // [source, mint, destination|delegate, owner], decimals
		if !checked(4) {
			return
		}
		d := data[9]
		e.From, e.Mint, e.To, e.Authority, e.Decimals = accts[0], accts[1], accts[2], accts[3], &d
	default:
		return
	}
	e.Amount, e.Kind = amount, EffectTransfer
	if data[0] == tokenApprove || data[0] == tokenApproveChecked {
		e.Kind, e.Unlimited = EffectApprove, amount.Uint64() == math.MaxUint64
	}
}

// LamportsOut is what the wallet pays: its fee and every system transfer from it.
func (p *Proposed) LamportsOut() *big.Int {
	out := new(big.Int).SetUint64(p.FeeLamports)
	for _, e := range p.Effects {
		if e.Kind == EffectNative && e.From == p.FeePayer {
			out.Add(out, e.Amount)
		}
	}
	return out
}

// ResolveMints names the mint of every token effect that does not state it (Transfer,
// Approve), read from its source token account; a source that is no token account fails.
func (c *Client) ResolveMints(ctx context.Context, p *Proposed) error {
	for i := range p.Effects {
		e := &p.Effects[i]
		if (e.Kind != EffectTransfer && e.Kind != EffectApprove) || e.Mint != "" {
			continue
		}
		a, err := c.AccountInfo(ctx, e.From)
		if err != nil {
			return err
		}
		if a == nil || len(a.Data) < 72 || a.Owner != e.Program {
			return fmt.Errorf("%w: instruction %d's source %s is not a token account", ErrProposal, i, e.From)
		}
		e.Mint = PublicKey(a.Data[:32]).String()
	}
	return nil
}

// Simulation is a proposal's run on the cluster.
type Simulation struct {
	Err           string // "" when it runs
	Logs          []string
	UnitsConsumed uint64
}

// ErrSimulationFailed is a proposal that fails when simulated: it is never signed.
var ErrSimulationFailed = errors.New("the transaction fails in simulation")

// SimulateProposed runs p unsigned (simulateTransaction, sigVerify false,
// replaceRecentBlockhash true: a proposal not yet signed, its blockhash judged at broadcast).
// A failing run is ErrSimulationFailed naming the error, with its Simulation.
func (c *Client) SimulateProposed(ctx context.Context, p *Proposed) (*Simulation, error) {
	var res struct {
		Value struct {
			Err           json.RawMessage `json:"err"`
			Logs          []string        `json:"logs"`
			UnitsConsumed uint64          `json:"unitsConsumed"`
		} `json:"value"`
	}
	if err := c.call(ctx, &res, "simulateTransaction", base64.StdEncoding.EncodeToString(p.Raw),
		map[string]any{"encoding": "base64", "sigVerify": false, "replaceRecentBlockhash": true, "commitment": "confirmed"}); err != nil {
		return nil, err
	}
	sim := &Simulation{Logs: res.Value.Logs, UnitsConsumed: res.Value.UnitsConsumed}
	if len(res.Value.Err) > 0 && string(res.Value.Err) != "null" {
		sim.Err = string(res.Value.Err)
		return sim, fmt.Errorf("%w: %s", ErrSimulationFailed, sim.Err)
	}
	return sim, nil
}

// SignProposed signs p's message bytes as they came with the wallet's ed25519 seed (its fee
// payer and only signer). LastValidBlockHeight is the latest height it can land at, bounded
// from above (the cluster's height now plus a blockhash's whole life): its expiry is proven
// only past it.
func (c *Client) SignProposed(ctx context.Context, p *Proposed, seed []byte) (*Signed, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("signing key of %d bytes, need %d", len(seed), ed25519.SeedSize)
	}
	key := ed25519.NewKeyFromSeed(seed)
	defer clear(key)
	if PublicKey(key[32:]).String() != p.FeePayer {
		return nil, errors.New("the wallet key is not the proposal's fee payer")
	}
	height, err := c.BlockHeight(ctx)
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, p.Message)
	raw := append([]byte{}, p.Raw...)
	_, at, _ := shortvec(raw)
	copy(raw[at:at+64], sig)
	return &Signed{Raw: raw, Signature: base58.Encode(sig), LastValidBlockHeight: height + BlockhashLife}, nil
}

// BlockhashLife is how many blocks a blockhash stays valid for (150 on every cluster).
const BlockhashLife = 150
