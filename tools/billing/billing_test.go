package billing_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/storetest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/service"
)

func newService(st *store.Store, tweak ...func(*billing.Config)) *billing.Service {
	cfg := billing.DefaultConfig()
	for _, f := range tweak {
		f(&cfg)
	}
	return billing.NewService(cfg, service.Deps{Store: st}, billing.Recording{})
}

func account(t *testing.T, st *store.Store, id string) *tools.Principal {
	t.Helper()
	now := time.Now().UTC()
	key := &accounts.APIKey{ID: "key-" + id, AccountID: id, Name: "k", Prefix: "p", Hash: "hash-" + id, Scopes: []string{"partner"},
		SpendLimitMicro: 1_000_000, RateLimitPerMinute: 60, CreatedAt: now}
	if err := accounts.New(st).Create(context.Background(), &accounts.Account{ID: id, Email: id + "@example.com", CreatedAt: now}, nil, key); err != nil {
		t.Fatal(err)
	}
	return &tools.Principal{AccountID: id, KeyID: key.ID, SpendLimitMicro: key.SpendLimitMicro}
}

func ledgerOK(t *testing.T, st *store.Store) {
	t.Helper()
	if err := ledger.Check(context.Background(), st); err != nil {
		t.Fatalf("ledger invariant: %v", err)
	}
}

func micro(n int64) *int64 { return &n }

// Price is the fee model: each unit, the tier, the floor, gas and its margin, rounding half up.
func TestPrice(t *testing.T) {
	s := newService(nil)
	for _, tc := range []struct {
		name  string
		tier  string
		terms billing.Terms
		want  billing.Quote
	}{
		{"per call, no routed value: the floor", "standard",
			billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString("0.05")},
			billing.Quote{ReserveMicro: 1000, MaxPartnerFeeMicro: 50_000, PlatformFeeMicro: 1000, Tier: "standard", PlatformBps: 30}},
		{"per call on routed value: tier bps", "standard",
			billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString("0.05"), Routed: micro(250_000_000)},
			billing.Quote{ReserveMicro: 1000, MaxPartnerFeeMicro: 50_000, PlatformFeeMicro: 750_000, RoutedValueMicro: micro(250_000_000), Tier: "standard", PlatformBps: 30}},
		{"bps, pro tier, gas with margin", "pro",
			billing.Terms{FeeUnit: billing.FeeBps, FeeRate: decimal.RequireFromString("25"), Routed: micro(1_000_001), Gas: &billing.Gas{Chain: "base", EstimateMicro: 3}},
			// 1,000,001 x 25 bps = 2500.0025 -> 2500; x 15 bps = 1500.0015 -> 1500; gas 3 + 1.5 -> 2 = 5
			billing.Quote{ReserveMicro: 1000, MaxPartnerFeeMicro: 2500, PlatformFeeMicro: 1500, GasChain: "base", GasEstimateMicro: 3, MaxGasMicro: 5,
				RoutedValueMicro: micro(1_000_001), Tier: "pro", PlatformBps: 15}},
		{"an unknown tier pays the default tier's", "gold",
			billing.Terms{FeeUnit: billing.FeeUSDPerCall, Routed: micro(10_000)},
			billing.Quote{ReserveMicro: 1000, PlatformFeeMicro: 30, RoutedValueMicro: micro(10_000), Tier: "standard", PlatformBps: 30}},
		{"bps at 0 without routed value is free", "standard",
			billing.Terms{FeeUnit: billing.FeeBps, FeeRate: decimal.Zero},
			billing.Quote{ReserveMicro: 1000, PlatformFeeMicro: 1000, Tier: "standard", PlatformBps: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Price(tc.tier, tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if got.ReserveMicro != tc.want.ReserveMicro || got.MaxPartnerFeeMicro != tc.want.MaxPartnerFeeMicro || got.PlatformFeeMicro != tc.want.PlatformFeeMicro ||
				got.GasEstimateMicro != tc.want.GasEstimateMicro || got.MaxGasMicro != tc.want.MaxGasMicro || got.Tier != tc.want.Tier || got.PlatformBps != tc.want.PlatformBps ||
				(got.RoutedValueMicro == nil) != (tc.want.RoutedValueMicro == nil) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := s.Price("standard", billing.Terms{FeeUnit: billing.FeeBps, FeeRate: decimal.NewFromInt(10)}); err != billing.ErrNeedsRoutedValue {
		t.Fatalf("bps without routed value: %v", err)
	}
	if _, err := s.Price("standard", billing.Terms{FeeUnit: "flat_usdc", FeeRate: decimal.NewFromInt(1)}); err == nil {
		t.Fatal("a flat fee was priced from credit")
	}
	if _, err := s.Price("standard", billing.Terms{FeeUnit: billing.FeeBps, FeeRate: decimal.NewFromInt(10_000), Routed: micro(billing.MaxGrantMicro)}); err == nil {
		t.Fatal("a call costing more than one grant was priced")
	}
}

// Settle caps the partner at its quoted rate and gas at the worst case held, and settles gas
// at the estimate when the partner reported none.
func TestSettleCaps(t *testing.T) {
	s := newService(nil)
	q, _ := s.Price("standard", billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString("0.001"), Gas: &billing.Gas{Chain: "base", EstimateMicro: 100}})
	_, c := q.Settle(5_000, micro(1_000), "book")
	if c.PartnerFeeMicro != 1000 || c.GasMicro != 150 || c.TotalMicro != 1000+1000+1000+150 {
		t.Fatalf("over-reporting partner: %+v", c)
	}
	_, c = q.Settle(400, nil, "book")
	if c.PartnerFeeMicro != 400 || c.GasMicro != 100 {
		t.Fatalf("gas unreported: %+v", c)
	}
}

func TestLedgerLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newService(st)
		p := account(t, st, "a")
		if err := s.Grant(ctx, "a", 10_000, "test grant"); err != nil {
			t.Fatal(err)
		}
		q := billing.Quote{ReserveMicro: 100, MaxPartnerFeeMicro: 800, PlatformFeeMicro: 100}
		if err := reserve(ctx, s, st, "r1", p, q, time.Minute); err != nil {
			t.Fatal(err)
		}
		ledgerOK(t, st)
		ca, _ := st.Credit(ctx, "a")
		if ca.AvailableMicro != 9_900 || ca.ReservedMicro != 100 || ca.HeldMicro != 900 {
			t.Fatalf("after reserve: %+v", ca)
		}
		settle := func(id string, stl billing.Settlement) (ok bool, err error) {
			err = st.InTx(ctx, func(ctx context.Context, tx *store.Q) error {
				ok, err = s.CloseIn(ctx, tx, id, billing.Conclusion{Settlement: &stl}, time.Now().UTC())
				return err
			})
			return ok, err
		}
		ok, err := settle("r1", billing.Settlement{PartnerFeeMicro: 500, PlatformFeeMicro: 50, PartnerBook: ledger.PartnerPayable("p1", "evm:0xabc")})
		if err != nil || !ok {
			t.Fatalf("settle: %v %v", ok, err)
		}
		ledgerOK(t, st)
		ca, _ = st.Credit(ctx, "a")
		ks, _ := st.KeySpendOf(ctx, p.KeyID)
		if ca.AvailableMicro != 9_350 || ca.ReservedMicro != 0 || ca.HeldMicro != 0 || ks.SpentMicro != 650 || ks.HeldMicro != 0 {
			t.Fatalf("after settle: %+v %+v", ca, ks)
		}
		// Settling or refunding a closed reservation changes nothing.
		if ok, err := settle("r1", billing.Settlement{PlatformFeeMicro: 1}); ok || err != nil {
			t.Fatalf("second settle: %v %v", ok, err)
		}
		if ok, err := s.Refund(ctx, "r1", "late"); ok || err != nil {
			t.Fatalf("refund after settle: %v %v", ok, err)
		}
		// More than the worst case held cannot be charged.
		if err := reserve(ctx, s, st, "r0", p, q, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := settle("r0", billing.Settlement{PartnerFeeMicro: 901, PartnerBook: "x"}); err == nil {
			t.Fatal("a settlement over the worst case was accepted")
		}
		if ok, err := s.Refund(ctx, "r0", "test"); !ok || err != nil {
			t.Fatal(ok, err)
		}

		// Failure: the reservation comes back whole.
		if err := reserve(ctx, s, st, "r2", p, q, time.Minute); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Refund(ctx, "r2", "partner failed"); !ok || err != nil {
			t.Fatalf("refund: %v %v", ok, err)
		}
		ledgerOK(t, st)
		if ca, _ = st.Credit(ctx, "a"); ca.AvailableMicro != 9_350 || ca.ReservedMicro != 0 || ca.HeldMicro != 0 {
			t.Fatalf("after refund: %+v", ca)
		}

		// Refusals write nothing: one rule (spent + held + worst against the limit; available
		// minus held against the worst) for a kept quote and the hold alike. Priced with the
		// default 1000 infrastructure and 1000 platform floor.
		kept := func(p *tools.Principal, feeUSD string) (billing.Quote, error) {
			return s.For(p, billing.Spend{}).Quote(ctx, billing.Terms{FeeUnit: billing.FeeUSDPerCall, FeeRate: decimal.RequireFromString(feeUSD), Kept: true})
		}
		big := billing.Quote{ReserveMicro: 1000, MaxPartnerFeeMicro: 7_351, PlatformFeeMicro: 1000} // 9351 > 9350 free
		_, bigErr := kept(p, "0.007351")
		if q, err := kept(p, "0.00735"); err != nil || q.WorstMicro() != 9_350 {
			t.Fatalf("a kept quote that fits exactly: %+v %v", q, err)
		}
		for _, check := range []error{bigErr, reserve(ctx, s, st, "r3", p, big, time.Minute)} {
			if e, ok := check.(*tools.Error); !ok || e.Code != tools.CodeInsufficientCredits {
				t.Fatalf("over credit: %v", check)
			}
		}
		limited := *p
		limited.SpendLimitMicro = 1_500
		_, limitedErr := kept(&limited, "0") // 650 spent + 2000 > 1500
		for _, check := range []error{limitedErr, reserve(ctx, s, st, "r4", &limited, q, time.Minute)} {
			if e, ok := check.(*tools.Error); !ok || e.Code != tools.CodeSpendLimit {
				t.Fatalf("over spend limit (650 spent + 1000 > 1500): %v", check)
			}
		}
		if e, _ := ledger.Entries(ctx, st, "r3"); len(e) != 0 {
			t.Fatal("a refused reservation wrote ledger rows")
		}
		ledgerOK(t, st)

		// An abandoned reservation is refunded by the sweeper after its deadline only.
		if err := reserve(ctx, s, st, "r5", p, billing.Quote{ReserveMicro: 100, PlatformFeeMicro: 100}, -time.Hour); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Sweep(ctx); n != 1 || err != nil {
			t.Fatalf("sweep: %d %v", n, err)
		}
		ledgerOK(t, st)
	})
}

// Concurrent reservations may not together exceed the credit.
func TestReserveConcurrentHolds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newService(st)
		p := account(t, st, "c")
		if err := s.Grant(ctx, "c", 1_000, "grant"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := reserve(ctx, s, st, "rc"+string(rune('a'+i)), p, billing.Quote{ReserveMicro: 10, MaxPartnerFeeMicro: 290}, time.Minute)
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				} else if e, ok := err.(*tools.Error); !ok || e.Code != tools.CodeInsufficientCredits {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if won != 3 {
			t.Fatalf("%d reservations of worst case 300 fit in 1000 credit, want 3", won)
		}
		ledgerOK(t, st)
	})
}

// A grant that would lift the balance over its cap is refused under the balance lock, and
// nothing of it is written.
func TestGrantRespectsTheBalanceCap(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newService(st, func(c *billing.Config) { c.MaxBalanceMicro = 1000 })
		account(t, st, "capped")
		if err := s.Grant(ctx, "capped", 600, "first"); err != nil {
			t.Fatal(err)
		}
		if err := s.Grant(ctx, "capped", 500, "over"); err == nil {
			t.Fatal("a grant over the cap was accepted")
		}
		if err := s.Grant(ctx, "capped", 400, "to the cap"); err != nil {
			t.Fatalf("grant up to the cap: %v", err)
		}
		if ca, _ := st.Credit(ctx, "capped"); ca.AvailableMicro != 1000 {
			t.Fatalf("balance %d, want 1000", ca.AvailableMicro)
		}
		if err := s.Grant(ctx, "capped", billing.MaxGrantMicro+1, "huge"); err == nil {
			t.Fatal("a grant over MaxGrantMicro was accepted")
		}
		ledgerOK(t, st)
	})
}

// reserve holds a call's worst case in its own transaction (billing.Hold without a lease),
// with nothing written beside it.
func reserve(ctx context.Context, s *billing.Service, _ *store.Store, requestID string, p *tools.Principal, q billing.Quote, callTimeout time.Duration) error {
	_, err := s.Hold(ctx, p, billing.Plan{RequestID: requestID, Quote: q, Runs: callTimeout}, noRecord)
	return err
}

func noRecord(context.Context, *store.Q, *billing.Hold) error { return nil }

// A partner's fees are owed in the book of its payout address on the settlement chain: the
// chain's own entry first, then its namespace's, else the partner's unassigned book.
func TestPayoutBook(t *testing.T) {
	for _, tc := range []struct {
		addrs map[string]string
		want  string
	}{
		{map[string]string{"evm:base": "0xbase", "evm": "0xany"}, ledger.PartnerPayable("p1", "evm:base:0xbase")},
		{map[string]string{"evm": "0xany", "solana": "So1"}, ledger.PartnerPayable("p1", "evm:0xany")},
		{map[string]string{"evm:base": "", "solana": "So1"}, ledger.PartnerPayable("p1", "unassigned")},
		{nil, ledger.PartnerPayable("p1", "unassigned")},
	} {
		if got := billing.PayoutBook("p1", tc.addrs, "evm:base"); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.addrs, got, tc.want)
		}
	}
}

// What a call of an intent means for money is decided from the intent alone: its fee rate as
// published (one refused at publish charges nothing), its terms kept for a write's
// confirmation, its payout book, and a durable record for a write or a fee paid on chain.
func TestMoneyOf(t *testing.T) {
	durable := billing.DurabilityOf(true, false)
	for _, tc := range []struct {
		in      billing.Intent
		rate    string
		durable bool
	}{
		{billing.Intent{FeeUnit: billing.FeeUSDPerCall, FeeRate: "0.25"}, "0.25", false},
		{billing.Intent{FeeUnit: billing.FeeBps, FeeRate: "30", Write: true}, "30", true},
		{billing.Intent{FeeUnit: "flat_usdc", FeeRate: "1.5", PaidOnChain: true}, "1.5", true},
		{billing.Intent{FeeUnit: billing.FeeUSDPerCall, FeeRate: "-1"}, "0", false},
		{billing.Intent{FeeUnit: billing.FeeUSDPerCall, FeeRate: "a lot", WalletSigns: true}, "0", false},
	} {
		tc.in.PartnerID, tc.in.PayoutAddresses = "p1", map[string]string{"evm:base": "0xbase"}
		m := billing.MoneyOf(tc.in, "evm:base")
		if m.Terms.FeeRate.String() != tc.rate || m.Terms.FeeUnit != tc.in.FeeUnit || m.Terms.Kept != tc.in.Write || m.Terms.WalletSigns != tc.in.WalletSigns ||
			m.Terms.Routed != nil || m.Terms.Gas != nil || m.PayoutBook != ledger.PartnerPayable("p1", "evm:base:0xbase") || (m.Durability == durable) != tc.durable {
			t.Errorf("%+v: %+v, want rate %s durable %v", tc.in, m, tc.rate, tc.durable)
		}
	}
}
