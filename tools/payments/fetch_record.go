package payments

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// An x402 payment's record is what makes it once. It is named by the call's requestId (the
// Idempotency-Key's CallID, chosen before the call runs), and it holds what is signed before it
// is signed: the EIP-3009 authorization's from, to, value, window, nonce, token and chain.
// A call that finds its record dispatching or concluded answers what is recorded and signs
// nothing; the sweeper (ReconcileFetches) concludes a record a crash or a lost answer left
// dispatching by asking the token whether the nonce was used.

// fetchArgs is an x402 payment's args, as recorded.
type fetchArgs struct {
	URL           string      `json:"url"`
	Method        string      `json:"method"`
	PayTo         string      `json:"payTo"`
	Amount        string      `json:"amount"`
	Authorization *signedAuth `json:"authorization,omitempty"` // set before it is signed
}

// signedAuth is the authorization an x402 payment signs, with the token and chain it is for.
type signedAuth struct {
	Authorization
	Token   string `json:"token"`
	ChainID int64  `json:"chainId"`
}

// FetchTimeout is how long x402_fetch waits for each request to a resource.
const FetchTimeout = 30 * time.Second

// authorize draws the authorization of price from payer to offer o's payTo: valid from a
// minute ago for the offer's timeout (at most an hour, default 5 minutes), with a fresh random
// nonce.
func (f *Fetches) authorize(payer string, o offer, price int64) (*signedAuth, error) {
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 || timeout > 3600 {
		timeout = 300
	}
	now := f.now().Unix()
	return &signedAuth{Token: f.pay.cfg.Token.Hex(), ChainID: f.pay.cfg.ChainID, Authorization: Authorization{
		From: common.HexToAddress(payer).Hex(), To: common.HexToAddress(o.PayTo).Hex(), Value: strconv.FormatInt(price, 10),
		ValidAfter: strconv.FormatInt(now-60, 10), ValidBefore: strconv.FormatInt(now+timeout, 10), Nonce: hexutil.Encode(nonce[:])}}, nil
}

// withAuth writes auth into inv's args.
func withAuth(inv *store.Invocation, auth *signedAuth) error {
	var args fetchArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return fmt.Errorf("x402 payment %s's args: %w", inv.RequestID, err)
	}
	args.Authorization = auth
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	inv.Args = string(raw)
	return nil
}

// recorded answers a call whose record already exists (done true): concluded, what it
// answered (or, without an answer, its outcome); dispatching, that its outcome is being
// learned; nothing is signed again.
func (f *Fetches) recorded(ctx context.Context, accountID, requestID string) (FetchOutput, bool, error) {
	inv, err := invocations.New(f.store).Get(ctx, accountID, requestID)
	if errors.Is(err, store.ErrNotFound) {
		return FetchOutput{}, false, nil
	}
	if err != nil {
		return FetchOutput{}, true, err
	}
	out, err := answerOf(inv)
	return out, true, err
}

// answerOf is what a recorded x402 payment answers a retry.
func answerOf(inv *store.Invocation) (FetchOutput, error) {
	if inv.Kind != store.KindX402 {
		return FetchOutput{}, tools.Errorf(tools.CodeConflict, "request %s is not an x402 payment; call x402_fetch with a new Idempotency-Key", inv.RequestID)
	}
	if inv.State == store.InvDispatching {
		e := tools.Errorf(tools.CodeConflict, "x402 payment %s was signed and sent, and its outcome is being determined on chain (the service lost its answer); "+
			"nothing more is signed for it. Retry in a minute with the same Idempotency-Key for its outcome", inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "state": inv.State})
		e.RetryAfter = 30 * time.Second
		return FetchOutput{}, e
	}
	if !store.StateOf(inv.State).Final {
		return FetchOutput{}, tools.Errorf(tools.CodeConflict, "x402 payment %s is %s; call x402_fetch with confirmRequestId %q to go on with it", inv.RequestID, inv.State, inv.RequestID).
			WithDetails(map[string]any{"requestId": inv.RequestID, "state": inv.State})
	}
	if inv.Answer != nil {
		var body tools.Body
		if json.Unmarshal([]byte(*inv.Answer), &body) == nil && body.Error != nil {
			return FetchOutput{}, body.Error
		}
		var out FetchOutput
		if json.Unmarshal([]byte(*inv.Answer), &out) == nil && out.Status != 0 {
			return out, nil
		}
	}
	msg := inv.OutcomeMessage
	if msg == "" {
		msg = inv.State
	}
	return FetchOutput{}, tools.Errorf(tools.CodeUpstream, "x402 payment %s ended %s (%s); nothing more is signed for it", inv.RequestID, inv.State, msg).
		WithDetails(map[string]any{"requestId": inv.RequestID, "state": inv.State})
}

// fetchAfter is how long an x402 payment stays dispatching before the sweeper judges it
// (its request's timeout and the configured margin).
func (s *Service) fetchAfter() time.Duration {
	if s.cfg.SweepMargin > 0 {
		return FetchTimeout + s.cfg.SweepMargin
	}
	return FetchTimeout + 30*time.Second
}

// ReconcileFetches concludes, once each, the x402 payments left dispatching past the bound by a
// crash or a lost answer, by the chain: the token's authorizationState for the recorded
// (from, nonce) says used (succeeded, in the transaction its AuthorizationUsed log names) or
// unused; unused and past its validBefore by the chain's clock, it can never be used (failed);
// unused and still valid, it is left for a later sweep. Safe on several replicas: ConcludeMove
// moves a record out of dispatching once. It returns how many it concluded.
func (s *Service) ReconcileFetches(ctx context.Context) (int, error) {
	open, err := invocations.New(s.store).Dispatching(ctx, store.KindX402, s.now().UTC().Add(-s.fetchAfter()), 100)
	if err != nil || len(open) == 0 {
		return 0, err
	}
	chainNow, err := s.chain.Now(ctx)
	if err != nil {
		return 0, fmt.Errorf("the chain's time: %w", err)
	}
	n := 0
	for _, inv := range open {
		done, err := s.judgeFetch(ctx, inv, chainNow)
		if errors.Is(err, billing.ErrAlreadyFinished) {
			continue // another replica, or its own process, concluded it
		}
		if err != nil {
			return n, fmt.Errorf("x402 payment %s: %w", inv.RequestID, err)
		}
		if done {
			n++
		}
	}
	return n, nil
}

// judgeFetch concludes one x402 payment left dispatching when the chain knows its outcome.
func (s *Service) judgeFetch(ctx context.Context, inv *store.Invocation, chainNow time.Time) (bool, error) {
	var args fetchArgs
	if err := json.Unmarshal([]byte(inv.Args), &args); err != nil {
		return false, fmt.Errorf("its args: %w", err)
	}
	a := args.Authorization
	ev := webhooks.X402Data{RequestID: inv.RequestID, KeyID: inv.KeyID, URL: args.URL, Host: inv.Handle, PaidUsd: tools.USD(inv.ValueMicro).String(), PayTo: args.PayTo}
	if inv.Network != nil {
		ev.Network = *inv.Network
	}
	t, err := s.billing.ReopenMove(inv)
	if err != nil {
		return false, err
	}
	if a == nil {
		// Recorded by a release that signed after recording: whether it was signed is not known.
		e := tools.Errorf(tools.CodeUpstream, "x402 payment %s was interrupted by a restart before its outcome was recorded, and the record cannot tell whether it was paid; see the wallet's transfers", inv.RequestID)
		return true, t.ConcludeMove(ctx, billing.Moved{Unknown: true, Code: string(e.Code), Detail: "interrupted; not recorded what was signed", Answer: answerBody(e), Event: ev})
	}
	ev.Payer = a.From
	if a.ChainID != s.cfg.ChainID || !common.IsHexAddress(a.Token) || common.HexToAddress(a.Token) != s.cfg.Token {
		s.log.WarnContext(ctx, "an x402 payment on another network is left dispatching", "request_id", inv.RequestID, "chain_id", a.ChainID, "token", a.Token)
		return false, nil
	}
	used, tx, err := s.authUsed(ctx, a)
	if err != nil {
		return false, err
	}
	if used {
		ev.TxHash, ev.Reason = tx, "settled on chain; the seller's answer was lost"
		e := tools.Errorf(tools.CodeUpstream, "x402 payment %s was settled on chain (%s USD to %s, transaction %s), but the seller's answer was lost when the service restarted; "+
			"it is not paid again. Ask the seller for the resource with the transaction as the receipt", inv.RequestID, tools.USD(inv.ValueMicro), a.To, orNone(tx)).
			WithDetails(map[string]any{"requestId": inv.RequestID, "state": store.InvSucceeded, "paidUsd": tools.USD(inv.ValueMicro).String(), "txHash": tx})
		return true, t.ConcludeMove(ctx, billing.Moved{Settled: true, TxHash: tx, Detail: "settled on chain (found by the sweeper); the answer was lost", Answer: answerBody(e), Event: ev})
	}
	before, ok := new(big.Int).SetString(a.ValidBefore, 10)
	if !ok {
		return false, fmt.Errorf("its validBefore %q", a.ValidBefore)
	}
	if chainNow.Unix() < before.Int64() {
		return false, nil // the seller may still settle it
	}
	ev.PaidUsd, ev.Reason = "0", "the authorization expired unused"
	e := tools.Errorf(tools.CodeUpstream, "x402 payment %s was never settled: its authorization expired unused, so nothing was paid. Call x402_fetch again with a new Idempotency-Key to pay for the resource", inv.RequestID).
		WithDetails(map[string]any{"requestId": inv.RequestID, "state": store.InvFailed, "paidUsd": "0"})
	return true, t.ConcludeMove(ctx, billing.Moved{Code: string(e.Code), Detail: "the authorization expired unused (found by the sweeper)", Answer: answerBody(e), Event: ev})
}

// authUsed asks the token whether the authorization's nonce was used, and when it was, the
// transaction that used it ("" when its logs are not found).
func (s *Service) authUsed(ctx context.Context, a *signedAuth) (bool, string, error) {
	var nonce [32]byte
	copy(nonce[:], common.FromHex(a.Nonce))
	from, to := common.HexToAddress(a.From), common.HexToAddress(a.To)
	used, err := s.chain.AuthorizationUsed(ctx, s.cfg.Token, from, nonce)
	if err != nil || !used {
		return false, "", err
	}
	tr, err := s.chain.AuthorizedTransfer(ctx, s.cfg.Token, from, to, nonce)
	if err != nil || tr == nil {
		return true, "", err
	}
	return true, tr.Tx.Hex(), nil
}

// answerBody is an error as a record's answer (what idempotency and x402_fetch replay).
func answerBody(e *tools.Error) []byte {
	raw, _ := json.Marshal(tools.Body{Error: e})
	return raw
}

func orNone(s string) string {
	if s == "" {
		return "not found"
	}
	return s
}
