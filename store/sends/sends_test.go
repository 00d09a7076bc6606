package sends_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/sends"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

const from = "0x00000000000000000000000000000000000000aa"

func newSend(id string, now time.Time) *sends.Send {
	return &sends.Send{RequestID: id, AccountID: "a1", Chain: "base", From: from, To: "0xbb", Token: "native", Amount: "5", CreatedAt: now}
}

// signer counts its calls and signs "tx-<nonce>".
type signer struct {
	mu    sync.Mutex
	calls int
}

func (s *signer) sign(nonce uint64) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return []byte(fmt.Sprintf("raw-%d", nonce)), fmt.Sprintf("0xhash%d", nonce), nil
}

func TestPrepareTakesNoncesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a1")
		q := sends.New(st)
		now := time.Now()
		var sg signer
		s1, created, err := q.Prepare(ctx, newSend("r1", now), 0, sg.sign)
		if err != nil || !created || *s1.Nonce != 0 || string(s1.Raw) != "raw-0" || s1.Status != sends.Prepared {
			t.Fatalf("first: %+v %v %v", s1, created, err)
		}
		// The chain counts more than Switchboard gave (a send from elsewhere): its count wins.
		s2, _, err := q.Prepare(ctx, newSend("r2", now), 7, sg.sign)
		if err != nil || *s2.Nonce != 7 {
			t.Fatalf("second: %+v %v", s2, err)
		}
		s3, _, err := q.Prepare(ctx, newSend("r3", now), 3, sg.sign)
		if err != nil || *s3.Nonce != 8 {
			t.Fatalf("third: %+v %v", s3, err)
		}
		// The same request again: the recorded send, not signed again.
		again, created, err := q.Prepare(ctx, newSend("r1", now), 9, sg.sign)
		if err != nil || created || *again.Nonce != 0 || string(again.Raw) != "raw-0" || sg.calls != 3 {
			t.Fatalf("retry: %+v %v %v, %d signatures", again, created, err, sg.calls)
		}
		// A signature that fails takes no nonce.
		if _, _, err := q.Prepare(ctx, newSend("r4", now), 0, func(uint64) ([]byte, string, error) { return nil, "", errors.New("no key") }); err == nil {
			t.Fatal("a failed signature recorded a send")
		}
		if _, err := q.Get(ctx, "r4"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("r4: %v", err)
		}
		s5, _, err := q.Prepare(ctx, newSend("r5", now), 0, sg.sign)
		if err != nil || *s5.Nonce != 9 {
			t.Fatalf("after a failed signature: %+v %v", s5, err)
		}
		// Another chain, or another address, counts on its own.
		other := newSend("r6", now)
		other.Chain = "ethereum"
		if s6, _, err := q.Prepare(ctx, other, 0, sg.sign); err != nil || *s6.Nonce != 0 {
			t.Fatalf("other chain: %+v %v", s6, err)
		}
	})
}

// Two replicas on one database preparing sends of one address at once never take one nonce
// twice: the nonces are exactly 0..n-1.
func TestPrepareAcrossReplicas(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			dsn := storetest.DSN(t, d)
			a, b := storetest.OpenURL(t, dsn), storetest.OpenURL(t, dsn)
			storetest.Account(t, a, "a1")
			replicas := []sends.Sends{sends.New(a), sends.New(b)}
			const n = 24
			var wg sync.WaitGroup
			var sg signer
			nonces := make([]int, n)
			errs := make([]error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, _, err := replicas[i%2].Prepare(context.Background(), newSend(fmt.Sprint("r", i), time.Now()), 0, sg.sign)
					if errs[i] = err; err == nil {
						nonces[i] = int(*s.Nonce)
					}
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			sort.Ints(nonces)
			for i, got := range nonces {
				if got != i {
					t.Fatalf("nonces %v, want 0..%d each once", nonces, n-1)
				}
			}
		})
	}
}

func TestSendLife(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a1")
		q := sends.New(st)
		t0 := time.Now().Add(-time.Hour)
		var sg signer
		for _, id := range []string{"r1", "r2", "r3"} {
			if _, _, err := q.Prepare(ctx, newSend(id, t0), 0, sg.sign); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Submitted(ctx, "r1", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		due, err := q.Due(ctx, time.Now(), 10)
		if err != nil || len(due) != 3 || due[2].RequestID != "r1" || due[2].Status != sends.Submitted {
			t.Fatalf("due: %+v %v", due, err)
		}
		if err := q.Conclude(ctx, "r1", sends.Confirmed, "", "21000", 12, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := q.Conclude(ctx, "r1", sends.Dropped, "", "", 0, time.Now()); !errors.Is(err, sends.ErrNotOpen) {
			t.Fatalf("second conclusion: %v", err)
		}
		if err := q.Submitted(ctx, "r1", time.Now()); err != nil {
			t.Fatal(err)
		}
		if s, _ := q.Get(ctx, "r1"); s.Status != sends.Confirmed || s.Fee != "21000" || s.BlockNumber != 12 {
			t.Fatalf("a confirmed send moved: %+v", s)
		}
	})
}

// A refused send that holds the newest nonce gives it back; a send without nonces is
// recorded once and re-signed only by the replica that saw its old signature.
func TestSendRefusedAndResigned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a1")
		q := sends.New(st)
		t0 := time.Now().Add(-time.Hour)
		var sg signer
		for _, id := range []string{"r1", "r2", "r3"} {
			if _, _, err := q.Prepare(ctx, newSend(id, t0), 0, sg.sign); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Conclude(ctx, "r1", sends.Confirmed, "", "21000", 12, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := q.Refused(ctx, "r2", "insufficient funds", time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := q.Refused(ctx, "r3", "insufficient funds", time.Now()); err != nil {
			t.Fatal(err)
		}
		s4, _, err := q.Prepare(ctx, newSend("r4", time.Now()), 0, sg.sign)
		if err != nil || *s4.Nonce != 2 {
			t.Fatalf("after refusals: %+v %v", s4, err)
		}
		if s, _ := q.Get(ctx, "r3"); s.Status != sends.Failed || s.Nonce != nil || s.Reason != "insufficient funds" {
			t.Fatalf("refused: %+v", s)
		}
		due, _ := q.Due(ctx, time.Now().Add(time.Second), 10)
		if len(due) != 1 || due[0].RequestID != "r4" {
			t.Fatalf("due at the end: %+v", due)
		}
		// Without nonces (Solana): recorded once, re-signed only while open.
		sol := &sends.Send{RequestID: "s1", AccountID: "a1", Chain: "solana", From: "F", To: "T", Token: "native", Amount: "1", Raw: []byte("a"), TxHash: "sigA", ValidUntil: 100, CreatedAt: t0}
		if _, created, err := q.Record(ctx, sol); err != nil || !created {
			t.Fatal(created, err)
		}
		sol.Raw = []byte("b")
		if got, created, err := q.Record(ctx, sol); err != nil || created || string(got.Raw) != "a" {
			t.Fatalf("second record: %+v %v %v", got, created, err)
		}
		if err := q.Resigned(ctx, "s1", "sigA", []byte("b"), "sigB", 200, time.Now()); err != nil {
			t.Fatal(err)
		}
		// A second replica that also saw sigA expire loses: its bytes must not go out.
		if err := q.Resigned(ctx, "s1", "sigA", []byte("c"), "sigC", 300, time.Now()); !errors.Is(err, sends.ErrNotOpen) {
			t.Fatalf("second re-signature: %v", err)
		}
		if s, _ := q.Get(ctx, "s1"); string(s.Raw) != "b" || s.TxHash != "sigB" || s.ValidUntil != 200 {
			t.Fatalf("re-signed: %+v", s)
		}
		if err := q.Conclude(ctx, "s1", sends.Prepared, "", "", 0, time.Now()); err == nil {
			t.Fatal("prepared is not an end")
		}
	})
}

// A send recorded never signed is never signed later (Prepare and Record answer it, failed),
// and one recorded first is not marked never signed: one insert decides; on both databases.
func TestUnsignedAndPrepareDecideOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		storetest.Account(t, st, "a1")
		q := sends.New(st)
		now := time.Now()
		var sg signer
		u, created, err := q.Unsigned(ctx, newSend("u1", now), "never signed")
		if err != nil || !created || u.Status != sends.Failed || u.Reason != "never signed" || u.Nonce != nil || u.TxHash != "" {
			t.Fatalf("unsigned: %+v %v %v", u, created, err)
		}
		got, created, err := q.Prepare(ctx, newSend("u1", now), 0, sg.sign)
		if err != nil || created || got.Status != sends.Failed || sg.calls != 0 {
			t.Fatalf("prepare after unsigned: %+v %v %v, %d signatures", got, created, err, sg.calls)
		}
		solana := newSend("u1", now)
		solana.Raw = []byte("signed")
		if got, created, err := q.Record(ctx, solana); err != nil || created || got.Status != sends.Failed {
			t.Fatalf("record after unsigned: %+v %v %v", got, created, err)
		}
		if due, _ := q.Due(ctx, time.Now().Add(time.Second), 10); len(due) != 0 {
			t.Fatalf("a never-signed send is due: %+v", due)
		}
		// Prepared first: it stays prepared, at the nonce the never-signed one did not take.
		p, _, err := q.Prepare(ctx, newSend("u2", now), 0, sg.sign)
		if err != nil || *p.Nonce != 0 {
			t.Fatalf("prepare: %+v %v", p, err)
		}
		if got, created, err := q.Unsigned(ctx, newSend("u2", now), "never signed"); err != nil || created || got.Status != sends.Prepared || got.TxHash != p.TxHash {
			t.Fatalf("unsigned after prepare: %+v %v %v", got, created, err)
		}
	})
}
