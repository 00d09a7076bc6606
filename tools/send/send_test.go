package send_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/switchboard-hq/switchboard/chain/evm"
	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Broadcast modes of the node proxy: what a crash at each point looks like to the sender.
const (
	pass = iota
	drop // the broadcast never reaches the node (killed after recording, before sending)
	lose // the node takes it, the answer never comes back (killed after sending)
)

// env is anvil behind a loopback proxy that can fail broadcasts, a store, and a sender whose
// account wallet is a funded anvil key.
type env struct {
	ch     *anviltest.Chain
	st     *store.Store
	direct *evm.Client // straight to anvil
	sender *send.Sender
	key    []byte
	from   [20]byte
	mode   atomic.Int32
	opened atomic.Int32 // how often the wallet key was opened (once per signature)
	signOn atomic.Bool
}

func newEnv(t *testing.T, st *store.Store) *env {
	t.Helper()
	e := &env{ch: anviltest.Start(t), st: st}
	e.signOn.Store(true)
	e.key = crypto.FromECDSA(e.ch.NewFundedKey(t))
	e.from = evm.AddressOf(e.key)
	storetest.Account(t, st, "a1")
	proxy := httptest.NewServer(http.HandlerFunc(e.proxy))
	t.Cleanup(proxy.Close)
	e.direct = evm.NewClient(anviltest.ChainID, e.ch.URL, &http.Client{}, time.Now)
	cfg := send.Config{EVM: map[string]send.Chain{"base": {Client: evm.NewClient(anviltest.ChainID, proxy.URL, &http.Client{}, time.Now)}}}
	e.sender = send.New(cfg, service.Deps{Store: st}, sends.New(st), send.Keys{EVM: func(_ context.Context, accountID string) ([]byte, string, error) {
		if !e.signOn.Load() {
			return nil, "", wallets.ErrSigningOff
		}
		e.opened.Add(1)
		return bytes.Clone(e.key), wallets.ChecksumAddress(e.from[:]), nil
	}})
	return e
}

func (e *env) proxy(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	mode := e.mode.Load()
	isSend := bytes.Contains(body, []byte("eth_sendRawTransaction"))
	if isSend && mode == drop {
		http.Error(w, "gateway gone", http.StatusBadGateway)
		return
	}
	resp, err := http.Post(e.ch.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if isSend && mode == lose {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.Copy(w, resp.Body)
}

func (e *env) eth(t *testing.T, a [20]byte) *big.Int {
	var s string
	e.ch.RPC(t, &s, "eth_getBalance", common.Address(a), "latest")
	n, _ := new(big.Int).SetString(s[2:], 16)
	return n
}

// follow runs Follow until the send ends (anvil mines at once; the wait covers the poll).
func (e *env) follow(t *testing.T, id string) *sends.Send {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := e.sender.Follow(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := sends.New(e.st).Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Open() {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("send %s still open", id)
	return nil
}

func recipient(t *testing.T, e *env) [20]byte { return evm.AddressOf(crypto.FromECDSA(e.ch.NewKey(t))) }

func hexOf(a [20]byte) string { return common.Address(a).Hex() }

// A repeated send of one request id signs once and moves the amount once; another body under
// the same id is refused; signing off refuses before anything is recorded.
func TestSendOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		to := recipient(t, e)
		amount := big.NewInt(250_000_000_000_000_000)
		req := send.Request{RequestID: "r1", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: amount}
		first, err := e.sender.Send(ctx, req)
		if err != nil || first.Status != sends.Submitted {
			t.Fatalf("send: %+v %v", first, err)
		}
		again, err := e.sender.Send(ctx, req)
		if err != nil || again.TxHash != first.TxHash || !bytes.Equal(again.Raw, first.Raw) {
			t.Fatalf("repeat: %+v %v", again, err)
		}
		if done := e.follow(t, "r1"); done.Status != sends.Confirmed || done.Fee == "" || done.Fee == "0" || done.BlockNumber == 0 {
			t.Fatalf("followed: %+v", done)
		}
		if after, err := e.sender.Send(ctx, req); err != nil || after.Status != sends.Confirmed || after.TxHash != first.TxHash {
			t.Fatalf("after confirmation: %+v %v", after, err)
		}
		if got := e.eth(t, to); got.Cmp(amount) != 0 {
			t.Fatalf("recipient holds %s wei, want %s once", got, amount)
		}
		if n := e.opened.Load(); n != 1 {
			t.Fatalf("the key was opened %d times, want once", n)
		}
		other := req
		other.Amount = big.NewInt(1)
		if _, err := e.sender.Send(ctx, other); !errors.Is(err, send.ErrOtherRequest) {
			t.Fatalf("another body under r1: %v", err)
		}

		// A token: 5 USDC moved exactly.
		token := [20]byte(e.ch.Token)
		e.ch.Mint(t, common.Address(e.from), 7_000_000)
		usdc := send.Request{RequestID: "r2", AccountID: "a1", Chain: "base", To: hexOf(to), Token: hexOf(token), Amount: big.NewInt(5_000_000)}
		if _, err := e.sender.Send(ctx, usdc); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sender.Send(ctx, usdc); err != nil {
			t.Fatal(err)
		}
		if s := e.follow(t, "r2"); s.Status != sends.Confirmed || *s.Nonce != 1 {
			t.Fatalf("token send: %+v", s)
		}
		if got, left := e.ch.Balance(t, common.Address(to)), e.ch.Balance(t, common.Address(e.from)); got != 5_000_000 || left != 2_000_000 {
			t.Fatalf("USDC: recipient %d, sender %d", got, left)
		}

		e.signOn.Store(false)
		if _, err := e.sender.Send(ctx, send.Request{RequestID: "r3", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: big.NewInt(1)}); !errors.Is(err, wallets.ErrSigningOff) {
			t.Fatalf("signing off: %v", err)
		}
		if _, err := sends.New(st).Get(ctx, "r3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused send was recorded: %v", err)
		}
		if _, err := e.sender.Send(ctx, send.Request{RequestID: "r4", AccountID: "a1", Chain: "nowhere", To: hexOf(to), Amount: big.NewInt(1)}); !errors.Is(err, send.ErrUnknownChain) {
			t.Fatalf("unknown chain: %v", err)
		}
	})
}

// Killed after recording, before the broadcast: the retry, or the follower, sends the very
// transaction recorded, and the amount moves once.
func TestSendCrashBeforeBroadcast(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		to := recipient(t, e)
		amount := big.NewInt(1_000_000_000)
		e.mode.Store(drop)
		req := send.Request{RequestID: "r1", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: amount}
		rec, err := e.sender.Send(ctx, req)
		if !errors.Is(err, send.ErrNotBroadcast) || rec == nil || rec.Status != sends.Prepared {
			t.Fatalf("dropped broadcast: %+v %v", rec, err)
		}
		if e.eth(t, to).Sign() != 0 {
			t.Fatal("a dropped broadcast moved money")
		}
		e.mode.Store(pass)
		again, err := e.sender.Send(ctx, req)
		if err != nil || again.TxHash != rec.TxHash || !bytes.Equal(again.Raw, rec.Raw) || again.Status != sends.Submitted {
			t.Fatalf("retry: %+v %v", again, err)
		}
		e.follow(t, "r1")

		// No retry at all: the follower sends the recorded transaction.
		e.mode.Store(drop)
		lone, err := e.sender.Send(ctx, send.Request{RequestID: "r2", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: amount})
		if !errors.Is(err, send.ErrNotBroadcast) {
			t.Fatal(err)
		}
		e.mode.Store(pass)
		if s := e.follow(t, "r2"); s.Status != sends.Confirmed || s.TxHash != lone.TxHash {
			t.Fatalf("followed: %+v", s)
		}
		if got := e.eth(t, to); got.Cmp(new(big.Int).Mul(amount, big.NewInt(2))) != 0 {
			t.Fatalf("recipient holds %s, want two sends of %s", got, amount)
		}
		if n := e.opened.Load(); n != 2 {
			t.Fatalf("the key was opened %d times for two sends", n)
		}
	})
}

// Killed after the node took the transaction, before its answer: the retry finds it mined (or
// known) and the amount moves once.
func TestSendCrashAfterBroadcast(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		to := recipient(t, e)
		amount := big.NewInt(3_000_000_000)
		e.mode.Store(lose)
		req := send.Request{RequestID: "r1", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: amount}
		rec, err := e.sender.Send(ctx, req)
		if !errors.Is(err, send.ErrNotBroadcast) {
			t.Fatalf("lost answer: %+v %v", rec, err)
		}
		e.mode.Store(pass)
		again, err := e.sender.Send(ctx, req)
		if err != nil || again.TxHash != rec.TxHash {
			t.Fatalf("retry: %+v %v", again, err)
		}
		if s := e.follow(t, "r1"); s.Status != sends.Confirmed {
			t.Fatalf("followed: %+v", s)
		}
		if got := e.eth(t, to); got.Cmp(amount) != 0 {
			t.Fatalf("recipient holds %s, want %s once", got, amount)
		}
	})
}

// A recorded send whose nonce another transaction took ends dropped and moves nothing; a mined
// send that reverts ends failed with the gas it paid; a node's outright refusal ends failed
// and gives the nonce back.
func TestFollowDroppedAndFailed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		to := recipient(t, e)
		e.mode.Store(drop)
		rec, err := e.sender.Send(ctx, send.Request{RequestID: "r1", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: big.NewInt(777)})
		if !errors.Is(err, send.ErrNotBroadcast) {
			t.Fatal(err)
		}
		// Another wallet (the exported key elsewhere) uses the same nonce first.
		elsewhere := recipient(t, e)
		direct(t, e, evm.Transfer{From: e.from, To: elsewhere, Amount: big.NewInt(1)}, uint64(*rec.Nonce))
		e.mode.Store(pass)
		if s := e.follow(t, "r1"); s.Status != sends.Dropped {
			t.Fatalf("followed: %+v", s)
		}
		if e.eth(t, to).Sign() != 0 {
			t.Fatal("a dropped send moved money")
		}

		// Priced while the tokens were there, sent once they had gone: mined, reverted.
		token := [20]byte(e.ch.Token)
		e.ch.Mint(t, common.Address(e.from), 5_000_000)
		req := send.Request{RequestID: "r2", AccountID: "a1", Chain: "base", To: hexOf(to), Token: hexOf(token), Amount: big.NewInt(5_000_000)}
		quoted, _, err := e.sender.Quote(ctx, e.from, req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := e.direct.PendingNonce(ctx, e.from)
		direct(t, e, evm.Transfer{From: e.from, To: elsewhere, Token: &token, Amount: big.NewInt(5_000_000)}, n)
		req.Quoted = quoted
		if _, err := e.sender.Send(ctx, req); err != nil {
			t.Fatal(err)
		}
		if s := e.follow(t, "r2"); s.Status != sends.Failed || s.Fee == "" || s.Reason == "" {
			t.Fatalf("reverted: %+v", s)
		}
		if e.ch.Balance(t, common.Address(to)) != 0 {
			t.Fatal("a reverted send moved tokens")
		}

		// More coin than the wallet holds, priced by hand past the estimate: the node refuses it.
		poor := send.Request{RequestID: "r3", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: new(big.Int).Lsh(big.NewInt(1), 100)}
		poor.Quoted = &evm.Tx{ChainID: anviltest.ChainID, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(10_000_000_000), Gas: 21000, To: to, Value: poor.Amount}
		s, err := e.sender.Send(ctx, poor)
		if err != nil || s.Status != sends.Failed || s.Nonce != nil {
			t.Fatalf("refused: %+v %v", s, err)
		}
		if _, err := e.sender.Send(ctx, send.Request{RequestID: "r4", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: big.NewInt(5)}); err != nil {
			t.Fatal(err)
		}
		if got := e.follow(t, "r4"); got.Status != sends.Confirmed || *got.Nonce != *nonceOf(t, e, "r2")+1 {
			t.Fatalf("after a refusal: %+v", got)
		}
	})
}

func nonceOf(t *testing.T, e *env, id string) *int64 {
	s, err := sends.New(e.st).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s.Nonce
}

// direct signs and sends tr at nonce straight to anvil, outside Switchboard, and waits for it.
func direct(t *testing.T, e *env, tr evm.Transfer, nonce uint64) {
	t.Helper()
	ctx := context.Background()
	tx, _, err := e.direct.Quote(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	tx.Nonce = nonce
	signed, err := tx.Sign(e.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.direct.SendRaw(ctx, signed.Raw); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, ok, _ := e.direct.Receipt(ctx, signed.Hash); ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the direct transaction was not mined")
}

// Run, the follower a replica runs, sends a recorded send nobody retries and ends it.
func TestRunFollows(t *testing.T) {
	st := storetest.Open(t, "sqlite")
	e := newEnv(t, st)
	to := recipient(t, e)
	e.mode.Store(drop)
	if _, err := e.sender.Send(context.Background(), send.Request{RequestID: "r1", AccountID: "a1", Chain: "base", To: hexOf(to), Amount: big.NewInt(42)}); !errors.Is(err, send.ErrNotBroadcast) {
		t.Fatal(err)
	}
	e.mode.Store(pass)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { e.sender.Run(ctx, 10*time.Millisecond); close(stopped) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := sends.New(st).Get(context.Background(), "r1")
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == sends.Confirmed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run left the send %s", s.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-stopped
	if got := e.eth(t, to); got.Int64() != 42 {
		t.Fatalf("recipient holds %s wei", got)
	}
}
