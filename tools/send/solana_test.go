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

	"github.com/switchboard-hq/switchboard/chain/solana/svmtest"
	"github.com/switchboard-hq/switchboard/chain/solana/transfer"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools/send"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// solEnv is litesvm behind a loopback proxy that can drop broadcasts, a store, and a sender
// whose account's Solana wallet is funded.
type solEnv struct {
	svm    *svmtest.SVM
	st     *store.Store
	c      *transfer.Client // straight to the SVM
	sender *send.Sender
	seed   []byte
	from   string
	drop   atomic.Bool
	opened atomic.Int32
}

func newSolEnv(t *testing.T, st *store.Store) *solEnv {
	t.Helper()
	e := &solEnv{svm: svmtest.Start(t), st: st}
	e.seed, e.from = svmtest.NewWallet(t)
	e.svm.Airdrop(t, e.from, 5_000_000_000)
	storetest.Account(t, st, "a1")
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if e.drop.Load() && bytes.Contains(body, []byte(`"sendTransaction"`)) {
			http.Error(w, "gateway gone", http.StatusBadGateway)
			return
		}
		resp, err := http.Post(e.svm.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	e.c = transfer.NewClient(e.svm.URL, &http.Client{}, time.Now)
	cfg := send.Config{Solana: transfer.NewClient(proxy.URL, &http.Client{}, time.Now)}
	e.sender = send.New(cfg, service.Deps{Store: st}, sends.New(st), send.Keys{Solana: func(context.Context, string) ([]byte, string, error) {
		e.opened.Add(1)
		return bytes.Clone(e.seed), e.from, nil
	}})
	return e
}

func (e *solEnv) lamports(t *testing.T, a string) uint64 {
	n, err := e.c.Lamports(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *solEnv) follow(t *testing.T, id string) *sends.Send {
	t.Helper()
	if _, err := e.sender.Follow(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := sends.New(e.st).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A repeated SOL or SPL send of one request id lands once, with the exact amount; the SPL
// send creates the recipient's token account.
func TestSolanaSendOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newSolEnv(t, st)
		ctx := context.Background()
		_, to := svmtest.NewWallet(t)
		req := send.Request{RequestID: "s1", AccountID: "a1", Chain: send.SolanaChain, To: to, Amount: big.NewInt(100_000_000)}
		first, err := e.sender.Send(ctx, req)
		if err != nil || first.Status != sends.Submitted || first.Nonce != nil || first.ValidUntil == 0 {
			t.Fatalf("send: %+v %v", first, err)
		}
		again, err := e.sender.Send(ctx, req)
		if err != nil || again.TxHash != first.TxHash {
			t.Fatalf("repeat: %+v %v", again, err)
		}
		if s := e.follow(t, "s1"); s.Status != sends.Confirmed {
			t.Fatalf("followed: %+v", s)
		}
		if got := e.lamports(t, to); got != 100_000_000 {
			t.Fatalf("recipient holds %d lamports", got)
		}

		mint := e.svm.CreateMint(t, 6)
		e.svm.FundTokens(t, e.from, mint, 9_000_000)
		plan, err := e.sender.QuoteSolana(ctx, e.from, send.Request{To: to, Token: mint, Amount: big.NewInt(4_000_000)})
		if err != nil || !plan.CreatesATA || plan.RentLamports == 0 {
			t.Fatalf("quote: %+v %v", plan, err)
		}
		spl := send.Request{RequestID: "s2", AccountID: "a1", Chain: send.SolanaChain, To: to, Token: mint, Amount: big.NewInt(4_000_000)}
		for i := 0; i < 2; i++ {
			if _, err := e.sender.Send(ctx, spl); err != nil {
				t.Fatal(err)
			}
		}
		if s := e.follow(t, "s2"); s.Status != sends.Confirmed {
			t.Fatalf("token send: %+v", s)
		}
		dst, _ := transfer.TokenAccount(to, mint)
		if got, err := e.c.TokenBalance(ctx, dst); err != nil || got.Int64() != 4_000_000 {
			t.Fatalf("recipient holds %v tokens (%v)", got, err)
		}
		if n := e.opened.Load(); n != 2 {
			t.Fatalf("the key was opened %d times for two sends", n)
		}
		if _, err := e.sender.Send(ctx, send.Request{RequestID: "s2", AccountID: "a1", Chain: send.SolanaChain, To: to, Token: mint, Amount: big.NewInt(5)}); !errors.Is(err, send.ErrOtherRequest) {
			t.Fatalf("another body under s2: %v", err)
		}
		// More SOL than the wallet holds: the node refuses the fresh bytes, the send ends failed.
		poor, err := e.sender.Send(ctx, send.Request{RequestID: "s3", AccountID: "a1", Chain: send.SolanaChain, To: to, Amount: big.NewInt(90_000_000_000)})
		if err != nil || poor.Status != sends.Failed || poor.Reason == "" {
			t.Fatalf("overdraft: %+v %v", poor, err)
		}
		if got := e.lamports(t, to); got != 100_000_000 {
			t.Fatalf("recipient holds %d after the refusal", got)
		}
	})
}

// Killed after recording, before the broadcast: the retry sends the recorded bytes.
func TestSolanaCrashBeforeBroadcast(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newSolEnv(t, st)
		ctx := context.Background()
		_, to := svmtest.NewWallet(t)
		e.drop.Store(true)
		req := send.Request{RequestID: "s1", AccountID: "a1", Chain: send.SolanaChain, To: to, Amount: big.NewInt(7_000_000)}
		rec, err := e.sender.Send(ctx, req)
		if !errors.Is(err, send.ErrNotBroadcast) || rec.Status != sends.Prepared {
			t.Fatalf("dropped: %+v %v", rec, err)
		}
		e.drop.Store(false)
		again, err := e.sender.Send(ctx, req)
		if err != nil || again.TxHash != rec.TxHash || !bytes.Equal(again.Raw, rec.Raw) {
			t.Fatalf("retry: %+v %v", again, err)
		}
		if s := e.follow(t, "s1"); s.Status != sends.Confirmed || s.TxHash != rec.TxHash {
			t.Fatalf("followed: %+v", s)
		}
		if got := e.lamports(t, to); got != 7_000_000 {
			t.Fatalf("recipient holds %d", got)
		}
	})
}

// A broadcast that never lands is signed again only once its blockhash provably expired (the
// height past its last valid one, no status), and then lands once; one that lands late,
// before its expiry, is never signed again.
func TestSolanaBlockhashExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newSolEnv(t, st)
		ctx := context.Background()
		_, to := svmtest.NewWallet(t)
		e.svm.Hold(t, true)
		req := send.Request{RequestID: "s1", AccountID: "a1", Chain: send.SolanaChain, To: to, Amount: big.NewInt(1_100_000)}
		first, err := e.sender.Send(ctx, req)
		if err != nil || first.Status != sends.Submitted {
			t.Fatalf("send: %+v %v", first, err)
		}
		e.svm.Release(t, false) // lost
		e.svm.Advance(t, 100)
		if s := e.follow(t, "s1"); s.TxHash != first.TxHash || !s.Open() {
			t.Fatalf("re-signed before the expiry: %+v", s)
		}
		e.svm.Release(t, false) // the re-broadcast lost too
		e.svm.Advance(t, 60)    // past lastValidBlockHeight
		s := e.follow(t, "s1")
		if s.TxHash == first.TxHash || s.ValidUntil <= first.ValidUntil {
			t.Fatalf("not re-signed after the expiry: %+v", s)
		}
		if e.svm.Release(t, true) != 1 { // the new bytes land
			t.Fatal("the re-signed transaction did not land")
		}
		if s := e.follow(t, "s1"); s.Status != sends.Confirmed {
			t.Fatalf("followed: %+v", s)
		}
		if got := e.lamports(t, to); got != 1_100_000 {
			t.Fatalf("recipient holds %d, want one send", got)
		}
		if n := e.opened.Load(); n != 2 {
			t.Fatalf("the key was opened %d times, want the first signature and one re-signature", n)
		}

		// Late but in time: the held bytes land, the follower sees them, nothing is re-signed.
		late, err := e.sender.Send(ctx, send.Request{RequestID: "s2", AccountID: "a1", Chain: send.SolanaChain, To: to, Amount: big.NewInt(2_200_000)})
		if err != nil {
			t.Fatal(err)
		}
		e.svm.Advance(t, 120)
		if s := e.follow(t, "s2"); !s.Open() || s.TxHash != late.TxHash {
			t.Fatalf("before landing: %+v", s)
		}
		if e.svm.Release(t, true) != 1 {
			t.Fatal("the late transaction did not land once")
		}
		e.svm.Advance(t, 100) // past its expiry: its status, not the height, decides
		if s := e.follow(t, "s2"); s.Status != sends.Confirmed || s.TxHash != late.TxHash {
			t.Fatalf("late landing: %+v", s)
		}
		if got := e.lamports(t, to); got != 3_300_000 {
			t.Fatalf("recipient holds %d, want 1100000 + 2200000", got)
		}
	})
}
