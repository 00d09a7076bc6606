package billing

import (
	"maps"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/ledger"
)

// concludedMove changes the balance and key rows exactly as a draw from a lease followed by
// the call's settlement or refund would, and its one ledger transaction balances, posts the
// same per-book totals as those two would, and leaves the reserved book alone.
func TestConcludedMoveNetsADrawAndItsConclusion(t *testing.T) {
	r := &store.Reservation{RequestID: "c", AccountID: "a", KeyID: "k", ReservedMicro: 100, WorstMicro: 400, CreatedAt: time.Now()}
	st := Settlement{PartnerFeeMicro: 120, PlatformFeeMicro: 50, GasMicro: 30, PartnerBook: ledger.PartnerPayable("p", "evm:0xabc")}
	settled, err := settleMove(r, st)
	if err != nil {
		t.Fatal(err)
	}
	draw := reserveMove(r) // a draw: the reservation's move, less the hold the lease had taken
	draw.credit.Held -= r.WorstMicro
	draw.held = 0
	books := func(moves ...move) map[string]int64 {
		out := map[string]int64{}
		for _, m := range moves {
			for _, l := range m.txn.Legs {
				if out[l.Book] += l.Micro; out[l.Book] == 0 {
					delete(out, l.Book)
				}
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		st   *Settlement
		end  move
	}{{"settled", &st, settled}, {"refunded", nil, refundMove(r, "failed")}} {
		got := concludedMove(r, c.st)
		want := move{credit: store.CreditDelta{Available: draw.credit.Available + c.end.credit.Available, Reserved: draw.credit.Reserved + c.end.credit.Reserved,
			Held: draw.credit.Held + c.end.credit.Held}, spent: draw.spent + c.end.spent, held: draw.held + c.end.held}
		if got.credit != want.credit || got.spent != want.spent || got.held != want.held {
			t.Fatalf("%s: credit %+v spent %d held %d, want %+v %d %d", c.name, got.credit, got.spent, got.held, want.credit, want.spent, want.held)
		}
		var sum int64
		for _, l := range got.txn.Legs {
			sum += l.Micro
			if l.Book == ledger.UserReserved(r.AccountID) && l.Micro != 0 {
				t.Fatalf("%s: a leg on the reserved book: %+v", c.name, l)
			}
		}
		if sum != 0 || !maps.Equal(books(got), books(draw, c.end)) {
			t.Fatalf("%s: legs sum to %d, books %v; want 0 and %v", c.name, sum, books(got), books(draw, c.end))
		}
	}
}
