// Package billing is every money rule of Switchboard, in one place: what a call costs (the
// partner's rate, the platform's tier fee on routed value or its per-call floor, gas passed
// through), whether it fits the caller's credit and spend limit, and how the ledger moves —
// a reservation at the start of a turn, one balanced settlement on success, a refund
// otherwise. The store gives it transaction-scoped primitives (row locks, balance deltas,
// balanced postings) and keeps no rule of its own.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/ledger"
	"github.com/switchboard-hq/switchboard/store/spending"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/tracing"
)

// Fee units of a partner's feeRate that dispatch charges from credit. The flat-fee units are
// paid on chain before dispatch (the flat-fee path), never from credit.
const (
	FeeUSDPerCall = "usd_per_call" // feeRate is USD per call
	FeeBps        = "bps"          // feeRate is basis points of the routed value
)

// Ledger books of the platform. Amounts are signed micro-USD: positive grows the book.
const (
	BookGrants        = "external:grants"
	BookTreasury      = ledger.BookTreasury // credit bought on chain (credit_topup) is paid into it
	BookPlatformFees  = ledger.BookPlatformFees
	BookPlatformInfra = ledger.BookPlatformInfra
	BookGas           = ledger.BookGas
)

// An Intent is what billing reads of a partner intent to decide what its calls mean for money
// (MoneyOf).
type Intent struct {
	PartnerID       string
	PayoutAddresses map[string]string // by chain ("evm:base") or namespace ("evm")
	FeeUnit         string            // FeeUSDPerCall, FeeBps, or a flat fee's unit
	FeeRate         string            // in FeeUnit, a decimal string (validated at publish)
	Write           bool              // its category moves value: quoted, confirmed, never sent twice
	PaidOnChain     bool              // its fee is paid on chain before dispatch (a flat fee)
	WalletSigns     bool              // its partner proposes transactions the caller's wallet signs
}

// Money is what a call of an intent means for money, decided once when the call is planned:
// its price terms before any value it routes, the ledger book its partner's fee is owed in,
// and how surely its outcome commits before it is answered.
type Money struct {
	Terms      Terms
	PayoutBook string
	Durability Durability
}

// MoneyOf is what a call of i means for money, its partner paid on settlementChain
// (PayoutBook).
func MoneyOf(i Intent, settlementChain string) Money {
	rate, err := decimal.NewFromString(i.FeeRate)
	if err != nil || rate.IsNegative() {
		rate = decimal.Zero // refused at publish; never charged here
	}
	return Money{
		Terms:      Terms{FeeUnit: i.FeeUnit, FeeRate: rate, Kept: i.Write, WalletSigns: i.WalletSigns},
		PayoutBook: PayoutBook(i.PartnerID, i.PayoutAddresses, settlementChain),
		Durability: DurabilityOf(i.Write, i.PaidOnChain),
	}
}

// PayoutBook is the ledger book a partner's fees are owed in: the book of its payout address
// on settlementChain (the namespace:chain entry first, e.g. "evm:base", then the bare
// namespace), or its "unassigned" book when it has neither.
func PayoutBook(partnerID string, payoutAddresses map[string]string, settlementChain string) string {
	ns, _, _ := strings.Cut(settlementChain, ":")
	for _, k := range []string{settlementChain, ns} {
		if addr, ok := payoutAddresses[k]; ok && addr != "" {
			return ledger.PartnerPayable(partnerID, k+":"+addr)
		}
	}
	return ledger.PartnerPayable(partnerID, "unassigned")
}

// Config prices invocations. All amounts are micro-USD.
type Config struct {
	InfraCostMicro     int64            // reserved at the start of every invocation, consumed on success
	TierBps            map[string]int64 // platform fee in basis points of routed value, by the caller's tier
	DefaultTier        string           // the tier of an account whose tier is not in TierBps
	PlatformFloorMicro int64            // platform fee of a call that routes no value
	GasMarginBps       int64            // held over a gas estimate for the worst case (5000: +50%)
	StartingGrantMicro int64            // credit granted to a new account (test environment)
	MaxBalanceMicro    int64            // the most an account's available + reserved credit may be
	SweepMargin        time.Duration
	// TierOf reads an account's fee tier (the app passes its cache); nil: the store.
	TierOf func(ctx context.Context, accountID string) (string, error)
	// Listens reports whether an account has an endpoint its call.* events would reach
	// (webhooks.Listeners.Any); nil: every event is written.
	Listens func(ctx context.Context, accountID string) bool
}

// DefaultConfig: 0.001 USD infrastructure reservation; tiers standard 30 bps, pro 15 bps,
// enterprise 5 bps on routed value; a 0.001 USD floor for calls that route no value; gas
// reserved at its estimate plus 50%; 10 USD of starting credit; 30 s sweep margin.
func DefaultConfig() Config {
	return Config{
		InfraCostMicro:     1_000,
		TierBps:            map[string]int64{"standard": 30, "pro": 15, "enterprise": 5},
		DefaultTier:        accounts.DefaultTier,
		PlatformFloorMicro: 1_000,
		GasMarginBps:       5_000,
		StartingGrantMicro: 10_000_000,
		MaxBalanceMicro:    MaxBalanceMicro,
		SweepMargin:        30 * time.Second,
	}
}

// Service moves credit.
type Service struct {
	store       *store.Store
	accounts    accounts.Accounts
	invocations invocations.Invocations
	spending    spending.Queries
	cfg         Config
	now         func() time.Time
	log         *slog.Logger
	rec         Recording
	leases      *Leases // nil: every hold commits before its call is dispatched
	pol         noPolicies
}

// NewService builds the billing service, recording calls as rec says (Recording{}: each
// record commits on its own before its caller is answered).
func NewService(cfg Config, d service.Deps, rec Recording) *Service {
	d = d.WithDefaults()
	rows := accounts.New(d.Store)
	if cfg.TierOf == nil {
		cfg.TierOf = rows.TierOf
	}
	if rec.Failpoint == nil {
		rec.Failpoint = func(string) {}
	}
	s := &Service{store: d.Store, accounts: rows, invocations: invocations.New(d.Store), spending: spending.New(d.Store), cfg: cfg, now: d.Now, log: d.Log, rec: rec, pol: noPolicies{seen: map[string]time.Time{}}}
	if rec.Batch != nil && rec.Leases != nil {
		s.leases = &Leases{svc: s, batch: rec.Batch, cfg: *rec.Leases, open: map[string]map[string]*lease{}}
	}
	return s
}

// Config returns the prices.
func (s *Service) Config() Config { return s.cfg }

// SetTier moves an account to a configured fee tier (the operator's admin command).
func (s *Service) SetTier(ctx context.Context, accountID, tier string) error {
	if _, ok := s.cfg.TierBps[tier]; !ok {
		names := make([]string, 0, len(s.cfg.TierBps))
		for n := range s.cfg.TierBps {
			names = append(names, n)
		}
		slices.Sort(names)
		return tools.Errorf(tools.CodeBadInput, "no fee tier %q; the configured tiers are %s (SWITCHBOARD_FEE_TIERS)", tier, strings.Join(names, ", "))
	}
	return s.accounts.SetTier(ctx, accountID, tier)
}

// Terms are what a call is priced from.
type Terms struct {
	FeeUnit string          // FeeUSDPerCall or FeeBps
	FeeRate decimal.Decimal // the partner's feeRate in that unit
	// Routed is the USD value (micro) the call's args move: a write's amount at its live
	// price. Nil when the call moves nothing, or the value cannot be quoted.
	Routed *int64
	// Gas is the on-chain step's estimate; nil when the call has none.
	Gas *Gas
	// WalletSigns: the call's on-chain steps are transactions its partner proposes, signed by
	// the caller's embedded wallet, which pays their gas on chain at its actual cost; the call
	// charges no gas from credit (neither the estimate nor what the partner reports).
	WalletSigns bool
	// Kept is a quote the caller keeps to confirm later (a write's): refused now, with
	// nothing written, when its worst case does not fit the key's limit and the account's
	// free credit, so nobody is asked to confirm what they cannot pay. The hold checks again
	// under the locks.
	Kept bool
}

// Gas is an estimate of the network fee of a call's on-chain step.
type Gas struct {
	Chain         string
	EstimateMicro int64
}

// Quote is the price of a call, fixed before dispatch and kept with the invocation.
type Quote struct {
	ReserveMicro       int64  // infrastructure, reserved at the start, consumed on success
	MaxPartnerFeeMicro int64  // the partner's rate applied: the most the partner can charge
	PlatformFeeMicro   int64  // the tier's basis points on routed value, or the floor
	GasChain           string // where gas is paid ("" when the call has no on-chain step)
	GasEstimateMicro   int64
	MaxGasMicro        int64  // the gas estimate plus the margin: the most gas can cost
	RoutedValueMicro   *int64 // the value routed, when known
	Tier               string
	PlatformBps        int64
}

// Price is the quote as a call's record keeps it.
func (q Quote) Price() store.Price {
	return store.Price{ReserveMicro: q.ReserveMicro, MaxPartnerFeeMicro: q.MaxPartnerFeeMicro, MaxPlatformFeeMicro: q.PlatformFeeMicro,
		RoutedValueMicro: q.RoutedValueMicro, GasChain: q.GasChain, GasEstimateMicro: q.GasEstimateMicro, MaxGasMicro: q.MaxGasMicro}
}

// QuoteOf is the quote a call's record was priced with.
func QuoteOf(p store.Price) Quote {
	return Quote{ReserveMicro: p.ReserveMicro, MaxPartnerFeeMicro: p.MaxPartnerFeeMicro, PlatformFeeMicro: p.MaxPlatformFeeMicro,
		RoutedValueMicro: p.RoutedValueMicro, GasChain: p.GasChain, GasEstimateMicro: p.GasEstimateMicro, MaxGasMicro: p.MaxGasMicro}
}

// ExpectedMicro is what a call costs when the partner charges its full rate and gas is as
// estimated: the total a confirmation shows.
func (q Quote) ExpectedMicro() int64 {
	return q.ReserveMicro + q.MaxPartnerFeeMicro + q.PlatformFeeMicro + q.GasEstimateMicro
}

// MicroUSD is a USD amount in micro-USD, rounded down (the one rounding of a fee rate).
func MicroUSD(usd decimal.Decimal) int64 { return usd.Shift(6).Floor().IntPart() }

// WorstMicro is the most a call can cost: what is held while it runs.
func (q Quote) WorstMicro() int64 {
	return q.ReserveMicro + q.MaxPartnerFeeMicro + q.PlatformFeeMicro + q.MaxGasMicro
}

// ErrNeedsRoutedValue refuses to price a basis-point intent whose routed value is unknown:
// its partner fee depends on it.
var ErrNeedsRoutedValue = errors.New("the partner's fee is basis points of the routed value, which is unknown")

// Quote prices the call by its caller's account tier (and, for a Kept quote, checks it fits).
func (t *Ticket) Quote(ctx context.Context, terms Terms) (Quote, error) {
	s, p := t.svc, t.p
	tier := s.cfg.DefaultTier
	if acctTier, err := s.cfg.TierOf(ctx, p.AccountID); err != nil {
		return Quote{}, err
	} else if acctTier != "" {
		tier = acctTier
	}
	q, err := s.Price(tier, terms)
	if err != nil || !terms.Kept {
		return q, err
	}
	return q, s.check(ctx, p, q)
}

// Price prices a call for a caller of tier.
func (s *Service) Price(tier string, t Terms) (Quote, error) {
	bps, ok := s.cfg.TierBps[tier]
	if !ok {
		tier = s.cfg.DefaultTier
		bps = s.cfg.TierBps[tier]
	}
	q := Quote{ReserveMicro: s.cfg.InfraCostMicro, Tier: tier, PlatformBps: bps, RoutedValueMicro: t.Routed}
	switch t.FeeUnit {
	case FeeUSDPerCall, "":
		q.MaxPartnerFeeMicro = MicroUSD(t.FeeRate)
	case FeeBps:
		if t.Routed == nil {
			if t.FeeRate.IsZero() {
				break
			}
			return Quote{}, ErrNeedsRoutedValue
		}
		q.MaxPartnerFeeMicro = bpsOf(*t.Routed, t.FeeRate.IntPart())
	default:
		return Quote{}, fmt.Errorf("fee unit %q is not charged from credit", t.FeeUnit)
	}
	q.MaxPartnerFeeMicro = max(q.MaxPartnerFeeMicro, 0)
	if t.Routed != nil {
		q.PlatformFeeMicro = bpsOf(*t.Routed, bps)
	} else {
		q.PlatformFeeMicro = s.cfg.PlatformFloorMicro
	}
	if t.Gas != nil && !t.WalletSigns {
		q.GasChain, q.GasEstimateMicro = t.Gas.Chain, max(t.Gas.EstimateMicro, 0)
		q.MaxGasMicro = q.GasEstimateMicro + bpsOf(q.GasEstimateMicro, s.cfg.GasMarginBps)
	}
	if q.WorstMicro() > MaxGrantMicro || q.WorstMicro() < 0 {
		return Quote{}, tools.Errorf(tools.CodeBadInput, "this call could cost more than %s USD, the most one call may; split it", tools.USD(MaxGrantMicro))
	}
	return q, nil
}

// bpsOf is bps basis points of micro, rounded half up, in integers that cannot overflow for
// any amount under MaxBalanceMicro.
func bpsOf(micro, bps int64) int64 {
	return decimal.NewFromInt(micro).Mul(decimal.NewFromInt(bps)).Div(decimal.NewFromInt(10_000)).Round(0).IntPart()
}

// Charge is what an invocation reserved and was charged, for the caller's answer, in the
// portal's words: infrastructure, partner fee, platform fee, gas.
type Charge struct {
	InfrastructureMicro int64 `json:"infrastructureMicro" jsonschema_description:"the infrastructure fee every call costs: reserved at the start, charged on success, refunded on failure"`
	// ReservedMicro is InfrastructureMicro under its first name, kept for the clients that read it.
	ReservedMicro    int64 `json:"reservedMicro" jsonschema_description:"deprecated: the same as infrastructureMicro, kept for older clients"`
	PartnerFeeMicro  int64 `json:"partnerFeeMicro" jsonschema_description:"charged for the partner (0 unless the call succeeded)"`
	PlatformFeeMicro int64 `json:"platformFeeMicro" jsonschema_description:"the platform's fee: its tier basis points on the routed value, or the per-call floor"`
	GasMicro         int64 `json:"gasMicro" jsonschema_description:"network gas passed through (0 when the call has no on-chain step)"`
	TotalMicro       int64 `json:"totalMicro" jsonschema_description:"the one bundled charge: infrastructure + partner fee + platform fee + gas (0 when nothing was charged)"`
	RefundedMicro    int64 `json:"refundedMicro" jsonschema_description:"returned to your credit (the reservation, when the call failed)"`
}

// Refunded is the charge of a call that failed: its reservation returned.
func (q Quote) Refunded() Charge {
	return Charge{InfrastructureMicro: q.ReserveMicro, ReservedMicro: q.ReserveMicro, RefundedMicro: q.ReserveMicro}
}

// Settlement is how a successful call is charged, in one balanced ledger transaction.
type Settlement struct {
	PartnerFeeMicro  int64
	PlatformFeeMicro int64
	GasMicro         int64
	PartnerBook      string // ledger.PartnerPayable(partnerID, payout); "" when no partner fee
}

// Settle prices a successful call of q: the partner's reported cost capped at its quoted
// rate, the quoted platform fee, gas at the reported actual (capped at the worst case held)
// or, when the partner reported none, at the estimate; the reservation consumed.
func (q Quote) Settle(partnerCostMicro int64, gasActualMicro *int64, payoutBook string) (Settlement, Charge) {
	fee := min(max(partnerCostMicro, 0), q.MaxPartnerFeeMicro)
	gas := q.GasEstimateMicro
	if gasActualMicro != nil {
		gas = min(max(*gasActualMicro, 0), q.MaxGasMicro)
	}
	st := Settlement{PartnerFeeMicro: fee, PlatformFeeMicro: q.PlatformFeeMicro, GasMicro: gas, PartnerBook: payoutBook}
	return st, Charge{InfrastructureMicro: q.ReserveMicro, ReservedMicro: q.ReserveMicro, PartnerFeeMicro: fee, PlatformFeeMicro: q.PlatformFeeMicro, GasMicro: gas,
		TotalMicro: q.ReserveMicro + fee + q.PlatformFeeMicro + gas}
}

// spendLimits are the spend limits a key's call counts against: its own key's first, then each
// ancestor's, nearest first (the order of Reservation.SpendKeys). Each of those keys' spend
// rows counts its own calls and its descendants', so a tree never spends more than its root
// allows, however many keys are minted in it.
type spendLimits []int64

// limitsOf are p's spend limits, and the chain of ancestors its reservations record.
func limitsOf(p *tools.Principal) (spendLimits, string) {
	lim := make(spendLimits, 1, 1+len(p.Ancestors))
	lim[0] = p.SpendLimitMicro
	if len(p.Ancestors) == 0 {
		return lim, ""
	}
	ids := make([]string, len(p.Ancestors))
	for i, a := range p.Ancestors {
		lim, ids[i] = append(lim, a.SpendLimitMicro), a.KeyID
	}
	return lim, strings.Join(ids, ",")
}

// fits is the one rule of what a call may hold: the worst case must fit the account's free
// credit (available minus what calls in flight hold) and the spend limit of the key and of
// each of its ancestors (spent plus held by the calls in flight of it and its descendants).
// spends and limits are in the order of Reservation.SpendKeys.
func fits(ca *store.CreditAccount, spends []*store.KeySpend, worst int64, limits spendLimits) error {
	for i, ks := range spends {
		if ks.SpentMicro+ks.HeldMicro+worst > limits[i] {
			return spendLimitError(ks.SpentMicro+ks.HeldMicro, worst, limits[i], i > 0)
		}
	}
	if free := ca.AvailableMicro - ca.HeldMicro; free < worst {
		return creditError(free, worst)
	}
	return nil
}

// check refuses, without writing anything, a call whose worst case does not fit right now.
func (s *Service) check(ctx context.Context, p *tools.Principal, q Quote) (err error) {
	ctx, span := tracing.Child(ctx, "billing.check")
	defer func() { tracing.End(span, err) }()
	limits, chain := limitsOf(p)
	ks, err := s.store.KeySpends(ctx, (&store.Reservation{KeyID: p.KeyID, KeyChain: chain}).SpendKeys())
	if err != nil {
		return err
	}
	ca, err := s.store.Credit(ctx, p.AccountID)
	if err != nil {
		return err
	}
	return fits(ca, ks, q.WorstMicro(), limits)
}

// reserveIn writes r inside q's transaction, or refuses it (SPEND_LIMIT, INSUFFICIENT_CREDITS,
// nothing written) when its worst case does not fit (fitIn).
func (s *Service) reserveIn(ctx context.Context, q *store.Q, r *store.Reservation, limits spendLimits, admit func(ctx context.Context, q *store.Q) error) (err error) {
	ctx, span := tracing.Child(ctx, "billing.reserve")
	defer func() { tracing.End(span, err) }()
	if err := fitIn(ctx, q, r, limits, admit); err != nil {
		return err
	}
	m, err := written(r, reserveMove(r), r.CreatedAt)
	if err != nil {
		return err
	}
	return q.OpenReservation(ctx, r, m, r.CreatedAt)
}

// fitIn locks r's balance row and key rows inside q's transaction (the owner's policies
// judged, by admit, in between) and refuses r when its worst case does not fit, counting what
// other calls in flight may still take. The locks make concurrent calls, on any replica, queue
// for the check.
func fitIn(ctx context.Context, q *store.Q, r *store.Reservation, limits spendLimits, admit func(ctx context.Context, q *store.Q) error) error {
	ca, err := q.LockCredit(ctx, r.AccountID, r.CreatedAt)
	if err != nil {
		return err
	}
	if admit != nil {
		if err := admit(ctx, q); err != nil {
			return err
		}
	}
	ks, err := q.LockKeySpends(ctx, r.SpendKeys())
	if err != nil {
		return err
	}
	return fits(ca, ks, r.WorstMicro, limits)
}

// A move is one step of a reservation's money: what it does to the account's balance row and
// the key's spend row, and its balanced ledger transaction. Every path that moves credit
// applies these, alone or several in one write (apply), so each rule has one home.
type move struct {
	credit      store.CreditDelta
	spent, held int64 // the key's spend row
	txn         ledger.Txn
}

// reserveMove opens r: its reserved part moves from available to reserved, the rest of its
// worst case is held, and the key holds all of it.
func reserveMove(r *store.Reservation) move {
	return move{
		credit: store.CreditDelta{Available: -r.ReservedMicro, Reserved: r.ReservedMicro, Held: r.WorstMicro - r.ReservedMicro},
		held:   r.WorstMicro,
		txn: ledger.Txn{At: r.CreatedAt, Legs: []ledger.Posting{
			{Book: ledger.UserAvailable(r.AccountID), Micro: -r.ReservedMicro, Kind: "reserve"},
			{Book: ledger.UserReserved(r.AccountID), Micro: r.ReservedMicro, Kind: "reserve"}}},
	}
}

// settleMove charges a successful call: the reservation is consumed as infrastructure, and
// the partner fee, platform fee and gas are charged from available credit.
func settleMove(r *store.Reservation, st Settlement) (move, error) {
	charged := st.PartnerFeeMicro + st.PlatformFeeMicro + st.GasMicro
	if charged > r.WorstMicro-r.ReservedMicro {
		return move{}, fmt.Errorf("charges %d exceed the worst case %d held for %s", charged, r.WorstMicro-r.ReservedMicro, r.RequestID)
	}
	if st.PartnerFeeMicro > 0 && st.PartnerBook == "" {
		return move{}, fmt.Errorf("partner fee without a payout book for %s", r.RequestID)
	}
	avail := ledger.UserAvailable(r.AccountID)
	return move{
		credit: store.CreditDelta{Available: -charged, Reserved: -r.ReservedMicro, Held: -(r.WorstMicro - r.ReservedMicro)},
		spent:  r.ReservedMicro + charged, held: -r.WorstMicro,
		txn: ledger.Txn{Memo: "settlement", Legs: []ledger.Posting{
			{Book: ledger.UserReserved(r.AccountID), Micro: -r.ReservedMicro, Kind: "consume"},
			{Book: BookPlatformInfra, Micro: r.ReservedMicro, Kind: "consume"},
			{Book: avail, Micro: -st.PartnerFeeMicro, Kind: "partner_fee"},
			{Book: st.PartnerBook, Micro: st.PartnerFeeMicro, Kind: "partner_fee"},
			{Book: avail, Micro: -st.PlatformFeeMicro, Kind: "platform_fee"},
			{Book: BookPlatformFees, Micro: st.PlatformFeeMicro, Kind: "platform_fee"},
			{Book: avail, Micro: -st.GasMicro, Kind: "gas"},
			{Book: BookGas, Micro: st.GasMicro, Kind: "gas"}}},
	}, nil
}

// refundMove returns r: its reserved part back to available, its hold released.
func refundMove(r *store.Reservation, reason string) move {
	return move{
		credit: store.CreditDelta{Available: r.ReservedMicro, Reserved: -r.ReservedMicro, Held: -(r.WorstMicro - r.ReservedMicro)},
		held:   -r.WorstMicro,
		txn: ledger.Txn{Memo: reason, Legs: []ledger.Posting{
			{Book: ledger.UserReserved(r.AccountID), Micro: -r.ReservedMicro, Kind: "refund"},
			{Book: ledger.UserAvailable(r.AccountID), Micro: r.ReservedMicro, Kind: "refund"}}},
	}
}

// written is r's move m as the store writes it at now (store.Move): one update of the balance
// row, one of each key's row (when they change) and one insert of its ledger transaction.
func written(r *store.Reservation, m move, now time.Time) (store.Move, error) {
	rows, err := ledger.Rows(r.RequestID, now, m.txn)
	if err != nil {
		return store.Move{}, err
	}
	w := store.Move{AccountID: r.AccountID, Credit: m.credit, Keys: r.SpendKeys(), Spent: m.spent, Held: m.held}
	if len(rows) > 0 {
		w.Ledger = &rows
	}
	return w, nil
}

// adjust applies m's changes to r's balance and key rows (not its ledger transaction).
func adjust(ctx context.Context, q *store.Q, r *store.Reservation, now time.Time, m move) error {
	if err := q.AdjustCredit(ctx, r.AccountID, m.credit, now); err != nil {
		return err
	}
	if m.spent != 0 || m.held != 0 {
		return q.AdjustKeySpends(ctx, r.SpendKeys(), m.spent, m.held)
	}
	return nil
}

// CloseIn concludes the hold of the call requestID inside q's transaction, alone: settled (its
// reserved part consumed and the fees charged) or refunded, as closing decides. It reports
// false, changing nothing, when the hold was closed already (concluded elsewhere, or refunded
// by a sweeper). A call's conclusion closes its hold with the rest of its ending (outcomeIn).
func (s *Service) CloseIn(ctx context.Context, q *store.Q, requestID string, c Conclusion, now time.Time) (bool, error) {
	r, err := q.LockReservation(ctx, requestID)
	if err != nil {
		return false, err
	}
	h, err := closing(r, c, now)
	if err != nil || h == nil {
		return false, err
	}
	return true, q.CloseHold(ctx, requestID, *h, now)
}

// closing is the one decision of how a call's hold r (locked) ends at now, which the store
// writes as it is (store.Closing): settled with c's Settlement (settleMove), or refunded for
// c's Reason (refundMove); nil when r was closed already. A call's hold is never a budget
// lease (a lease's id names no call), whose return is refundIn's.
func closing(r *store.Reservation, c Conclusion, now time.Time) (*store.Closing, error) {
	if r.State != store.ReservationOpen {
		return nil, nil
	}
	state, m := store.ReservationRefunded, refundMove(r, c.Reason)
	if c.Settlement != nil {
		var err error
		if m, err = settleMove(r, *c.Settlement); err != nil {
			return nil, err
		}
		state = store.ReservationSettled
	}
	w, err := written(r, m, now)
	if err != nil {
		return nil, err
	}
	return &store.Closing{State: state, Move: w}, nil
}

// refundIn returns a call's reservation to available credit inside q's transaction. It
// reports false when the reservation was closed already.
func (s *Service) refundIn(ctx context.Context, q *store.Q, requestID, reason string, now time.Time) (_ bool, err error) {
	ctx, span := tracing.Child(ctx, "billing.refund")
	defer func() { tracing.End(span, err) }()
	if strings.HasPrefix(requestID, store.LeasePrefix) {
		r, err := q.LockReservation(ctx, requestID)
		if err != nil || r.State != store.ReservationOpen {
			return false, err
		}
		return true, s.settleLeaseIn(ctx, q, r, now)
	}
	return s.CloseIn(ctx, q, requestID, Conclusion{Reason: reason}, now)
}

// Refund refunds a reservation in its own transaction (a budget lease's is settled: its calls
// charged, the rest of its hold returned).
func (s *Service) Refund(ctx context.Context, requestID, reason string) (bool, error) {
	var done bool
	err := s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		var err error
		done, err = s.refundIn(ctx, q, requestID, reason, s.now().UTC())
		return err
	})
	return done, err
}

func spendLimitError(committed, worst, limit int64, ancestor bool) *tools.Error {
	if ancestor {
		return tools.Errorf(tools.CodeSpendLimit, "this call may cost up to %s USD and a key this key was minted under has spent or holds %s of its %s USD limit, which every key minted under it shares; use a key outside that tree, or one with room",
			tools.USD(worst), tools.USD(committed), tools.USD(limit)).
			WithDetails(map[string]any{"spentUsd": tools.USD(committed), "spendLimitUsd": tools.USD(limit), "maxChargeUsd": tools.USD(worst)})
	}
	return tools.Errorf(tools.CodeSpendLimit, "this call may cost up to %s USD and the key has spent or holds %s of its %s USD limit; use a key with a higher spendLimitUsd",
		tools.USD(worst), tools.USD(committed), tools.USD(limit)).
		WithDetails(map[string]any{"spentUsd": tools.USD(committed), "spendLimitUsd": tools.USD(limit), "maxChargeUsd": tools.USD(worst)})
}

func creditError(free, worst int64) *tools.Error {
	return tools.Errorf(tools.CodeInsufficientCredits, "this call may cost up to %s USD and the account has %s USD of credit free; buy credit with credit_topup (POST /v1/credit/topup, any x402 payer), or wait for calls in flight to finish",
		tools.USD(worst), tools.USD(max(free, 0))).
		WithDetails(map[string]any{"creditUsd": tools.USD(max(free, 0)), "maxChargeUsd": tools.USD(worst)})
}

// Bounds on money that enters an account (MaxBalanceMicro is Config.MaxBalanceMicro's default). Grants are checked before anything is written and
// the balance cap under the balance lock, so no sum can overflow and nothing is half-written.
const (
	MaxGrantMicro   = 1_000_000 * 1_000_000     // one grant: 1,000,000 USD
	MaxBalanceMicro = 1_000_000_000 * 1_000_000 // an account's available + reserved credit: 1,000,000,000 USD
)

// Grant adds credit to an account (operator command, starting grant).
func (s *Service) Grant(ctx context.Context, accountID string, micro int64, memo string) error {
	if micro <= 0 || micro > MaxGrantMicro {
		return tools.Errorf(tools.CodeBadInput, "a grant is more than 0 and at most %s USD, got %s USD; split a larger amount", tools.USD(MaxGrantMicro), tools.USD(micro))
	}
	now := s.now().UTC()
	return s.store.InTx(ctx, func(ctx context.Context, q *store.Q) error {
		return s.GrantIn(ctx, q, accountID, micro, memo, now)
	})
}

// StartingGrant grants a new account its starting credit in the transaction that creates it
// (nil when there is none).
func (s *Service) StartingGrant() accounts.CreateOption {
	if s.cfg.StartingGrantMicro <= 0 {
		return nil
	}
	return func(ctx context.Context, q *store.Q, acct *accounts.Account) error {
		return s.GrantIn(ctx, q, acct.ID, s.cfg.StartingGrantMicro, "starting grant", acct.CreatedAt)
	}
}

// GrantIn adds credit inside q's transaction (an account being created with its starting
// credit), refusing with nothing written when available plus reserved credit would pass
// MaxBalanceMicro.
func (s *Service) GrantIn(ctx context.Context, q *store.Q, accountID string, micro int64, memo string, now time.Time) error {
	_, err := s.creditIn(ctx, q, accountID, micro, "", memo, BookGrants, "grant", now, true)
	return err
}

// TopUpIn books credit bought on chain (credit_topup) inside q's transaction: the treasury's
// book to the account's available credit, in the ledger transaction txnID (the top-up's
// requestId, so it is posted once). It is never refused for the balance cap: the transfer is
// paid, and the top-up judged its cap before submitting it. It answers the new available credit.
func (s *Service) TopUpIn(ctx context.Context, q *store.Q, accountID string, micro int64, txnID, memo string, now time.Time) (int64, error) {
	return s.creditIn(ctx, q, accountID, micro, txnID, memo, BookTreasury, "topup", now, false)
}

// creditIn is money entering an account, whoever sent it: under the balance lock, the account's
// available credit grows by micro and the ledger moves it from the book it came from.
func (s *Service) creditIn(ctx context.Context, q *store.Q, accountID string, micro int64, txnID, memo, from, kind string, now time.Time, capped bool) (int64, error) {
	ca, err := q.LockCredit(ctx, accountID, now)
	if err != nil {
		return 0, err
	}
	// Under the balance lock, in integers that cannot overflow (both terms are bounded).
	if capped && ca.AvailableMicro+ca.ReservedMicro > s.cfg.MaxBalanceMicro-micro {
		return 0, tools.Errorf(tools.CodeBadInput, "this grant would bring the account's credit over the %s USD cap; nothing was credited", tools.USD(s.cfg.MaxBalanceMicro))
	}
	if err := q.AdjustCredit(ctx, accountID, store.CreditDelta{Available: micro}, now); err != nil {
		return 0, err
	}
	err = ledger.Post(ctx, q, txnID, memo, now,
		ledger.Posting{Book: from, Micro: -micro, Kind: kind},
		ledger.Posting{Book: ledger.UserAvailable(accountID), Micro: micro, Kind: kind})
	return ca.AvailableMicro + micro, err
}

// Sweep refunds every reservation whose deadline passed (settles a budget lease: Refund) and
// returns how many it closed.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	ids, err := s.store.ExpiredReservations(ctx, s.now().UTC(), 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		ok, err := s.Refund(ctx, id, "swept: never settled")
		if err != nil {
			return n, err
		}
		if ok {
			n++
			s.log.WarnContext(ctx, "refunded an abandoned reservation", "request_id", id)
		}
	}
	return n, nil
}
