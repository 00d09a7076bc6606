// Package usage is what an account's calls add up to, for the portal's charts and call logs:
// a caller's spend per day and per key, an intent's calls, success rate, latency and earnings
// per day, and the call logs of both sides. The rules live here: what a call cost, which calls
// a partner may see (its own intents', with the caller only as the pairwise pseudonym).
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/store/reports"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Days is the charts' window: this many UTC days, today included.
const Days = 30

// Config is what the usage reads call back into.
type Config struct {
	// Settled waits for the account's outcomes still being written ("": everyone's), so a
	// call just made shows: the kernel's Settled hook; nil: nothing is ever pending.
	Settled func(ctx context.Context, accountID string) error
	// UserID is the pseudonym a partner knows an account by (partners.Service.UserID).
	UserID func(accountID, partnerID string) string
}

// Service answers the usage reads.
type Service struct {
	store       *store.Store
	accounts    accounts.Accounts
	partners    partners.Partners
	invocations invocations.Invocations
	reports     reports.Reports
	now         func() time.Time
	settled     func(ctx context.Context, accountID string) error
	userID      func(accountID, partnerID string) string
}

// NewService builds the usage reads.
func NewService(cfg Config, d service.Deps) *Service {
	d = d.WithDefaults()
	return &Service{store: d.Store, accounts: accounts.New(d.Store), partners: partners.New(d.Store), invocations: invocations.New(d.Store), reports: reports.New(d.Store), now: d.Now, settled: cfg.Settled, userID: cfg.UserID}
}

func (s *Service) wait(ctx context.Context, accountID string) error {
	if s.settled == nil {
		return nil
	}
	return s.settled(ctx, accountID)
}

// days returns the window's UTC days, oldest first, and its first instant.
func (s *Service) days() ([]string, time.Time) {
	today := s.now().UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(Days - 1))
	out := make([]string, Days)
	for i := range out {
		out[i] = first.AddDate(0, 0, i).Format(time.DateOnly)
	}
	return out, first
}

// CostMicro is what a finished call cost its caller: the infrastructure reserve kept plus the
// partner and platform fees and gas; 0 while it is unfinished.
func CostMicro(inv *store.Invocation) int64 {
	if inv.FinishedAt == nil {
		return 0
	}
	return inv.ReserveMicro - inv.RefundedMicro + inv.PartnerFeeMicro + inv.PlatformFeeMicro + inv.GasMicro
}

// Series is one line of a chart: a value per day of the window.
type Series struct {
	Label  string  `json:"label"`
	KeyID  string  `json:"keyId"` // the key a spend series is of ("" for the total and the portal's own calls)
	Values []int64 `json:"values"`
	Total  int64   `json:"total"`
	Calls  int     `json:"calls"`
}

// Spend is an account's spend per day over the window, in micro-USD.
type Spend struct {
	Days  []string `json:"days"`
	Total Series   `json:"total"`
	ByKey []Series `json:"byKey"` // the keys that spent, biggest first
}

// Spend sums what the account's finished calls cost, per UTC day, overall and per key.
func (s *Service) Spend(ctx context.Context, p *tools.Principal) (Spend, error) {
	if err := s.wait(ctx, p.AccountID); err != nil {
		return Spend{}, err
	}
	days, since := s.days()
	rows, err := s.reports.SpendByDay(ctx, p.AccountID, since)
	if err != nil {
		return Spend{}, err
	}
	keys, err := s.accounts.Keys(ctx, p.AccountID)
	if err != nil {
		return Spend{}, err
	}
	label := func(id string) string {
		if id == "" {
			return "Signed in on the portal"
		}
		for _, k := range keys {
			if k.ID == id {
				return k.Name + " (" + k.Prefix + "…)"
			}
		}
		return "key " + id
	}
	out := Spend{Days: days, Total: Series{Label: "All keys", Values: make([]int64, Days)}}
	byKey := map[string]*Series{}
	for _, r := range rows {
		i := slices.Index(days, r.Day)
		if i < 0 {
			continue
		}
		k := byKey[r.KeyID]
		if k == nil {
			k = &Series{Label: label(r.KeyID), KeyID: r.KeyID, Values: make([]int64, Days)}
			byKey[r.KeyID] = k
		}
		for _, sr := range []*Series{&out.Total, k} {
			sr.Values[i] += r.SpentMicro
			sr.Total += r.SpentMicro
			sr.Calls += r.Calls
		}
	}
	for _, k := range byKey {
		out.ByKey = append(out.ByKey, *k)
	}
	slices.SortFunc(out.ByKey, func(a, b Series) int {
		if a.Total != b.Total {
			return int(b.Total - a.Total)
		}
		return strings.Compare(a.Label, b.Label)
	})
	return out, nil
}

// IntentDay is one day of an intent's record.
type IntentDay struct {
	Day          string   `json:"day"`
	Calls        int      `json:"calls"`
	Succeeded    int      `json:"succeeded"`
	SuccessRate  *float64 `json:"successRate"` // nil without calls
	P50          *int64   `json:"p50"`         // latency in ms; nil without answered calls
	P95          *int64   `json:"p95"`
	EarnedMicro  int64    `json:"earnedMicro"`
	LatencyCalls int      `json:"latencyCalls"` // how many latencies the percentiles are of
}

// IntentStats is one intent's record over the window.
type IntentStats struct {
	IntentID    string      `json:"intentId"`
	Handle      string      `json:"handle"`
	Days        []IntentDay `json:"days"`
	Calls       int         `json:"calls"`
	Succeeded   int         `json:"succeeded"`
	EarnedMicro int64       `json:"earnedMicro"`
}

// latencySample bounds the latencies read per intent for the percentiles.
const latencySample = 5000

// Intent returns the record of one of the caller's intents; another account's intent (or
// none) is NOT_FOUND.
func (s *Service) Intent(ctx context.Context, p *tools.Principal, intentID string) (IntentStats, error) {
	in, err := s.partners.OwnedIntent(ctx, p.AccountID, intentID)
	if errors.Is(err, store.ErrNotFound) {
		return IntentStats{}, tools.Errorf(tools.CodeNotFound, "no intent %s in this account; open one from your intents", intentID)
	}
	if err != nil {
		return IntentStats{}, err
	}
	if err := s.wait(ctx, ""); err != nil { // its calls are other accounts'
		return IntentStats{}, err
	}
	days, since := s.days()
	daily, err := s.reports.IntentDaily(ctx, in.ID, since)
	if err != nil {
		return IntentStats{}, err
	}
	lat, err := s.reports.IntentLatencies(ctx, in.ID, since, latencySample)
	if err != nil {
		return IntentStats{}, err
	}
	out := IntentStats{IntentID: in.ID, Handle: in.PublicIdentifier, Days: make([]IntentDay, Days)}
	for i, d := range days {
		out.Days[i].Day = d
	}
	for _, r := range daily {
		i := slices.Index(days, r.Day)
		if i < 0 {
			continue
		}
		d := &out.Days[i]
		d.Calls, d.Succeeded, d.EarnedMicro = r.Calls, r.Succeeded, r.EarnedMicro
		if r.Calls > 0 {
			rate := float64(r.Succeeded) / float64(r.Calls)
			d.SuccessRate = &rate
		}
		out.Calls += r.Calls
		out.Succeeded += r.Succeeded
		out.EarnedMicro += r.EarnedMicro
	}
	byDay := map[string][]int64{}
	for _, l := range lat {
		byDay[l.Day] = append(byDay[l.Day], l.LatencyMs)
	}
	for i := range out.Days {
		l := byDay[out.Days[i].Day]
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		p50, p95 := Percentile(l, 50), Percentile(l, 95)
		out.Days[i].P50, out.Days[i].P95, out.Days[i].LatencyCalls = &p50, &p95, len(l)
	}
	return out, nil
}

// Percentile is the nearest-rank percentile of sorted values (discover's rule).
func Percentile(sorted []int64, pct int) int64 {
	return sorted[(len(sorted)-1)*pct/100]
}

// Side is whose call log: the caller's own calls, or the calls to the partner's intents.
type Side string

const (
	Caller  Side = "caller"
	Partner Side = "partner"
)

// Outcomes are the states a call log filters by.
var Outcomes = []string{store.InvSucceeded, store.InvFailed, store.InvOutcomeUnknown, store.InvCancelled,
	store.InvDispatching, store.InvAwaitingConfirmation, store.InvAwaitingPayment}

// Kinds are the movements a call log filters by: a partner call, credit bought, an x402
// resource paid, a wallet send, a partner-proposed transaction.
var Kinds = []string{store.KindCall, store.KindTopup, store.KindX402, store.KindSend, store.KindProposed}

// Filter narrows a call log; all optional.
type Filter struct {
	KeyID    string // the caller's side only
	IntentID string
	Outcome  string
	Kind     string // one of Kinds
	Cursor   string // from the previous page's Next
	Limit    int    // default 25, at most 100
}

// Row is one call in a log.
type Row struct {
	RequestID   string `json:"requestId"`
	Handle      string `json:"handle"`
	IntentID    string `json:"intentId"`
	KeyID       string `json:"keyId"` // the caller's side only
	Outcome     string `json:"outcome"`
	OutcomeCode string `json:"outcomeCode"`
	HTTPStatus  *int   `json:"httpStatus"`
	LatencyMs   *int   `json:"latencyMs"`
	// ChargeMicro is what the call cost the caller (their side) or earned the partner (theirs).
	ChargeMicro int64 `json:"chargeMicro"`
	// Kind, ValueUsd, Network and TxHash say what moved money: a call, or an on-chain movement
	// with its USD value and its transaction.
	Kind      string     `json:"kind" jsonschema:"enum=call,enum=topup,enum=x402,enum=send,enum=proposed" jsonschema_description:"what moved money: call (a partner call), topup (credit bought), x402 (an x402 resource paid from the embedded wallet), send (a wallet send), proposed (a partner-proposed transaction)"`
	ValueUsd  *tools.USD `json:"valueUsd" jsonschema_description:"the movement's USD value when it was judged (a top-up: the credit it bought); null for a call, whose cost is chargeMicro"`
	Network   *string    `json:"network" jsonschema_description:"the CAIP-2 chain id of an on-chain movement (e.g. eip155:8453); null for a call"`
	TxHash    *string    `json:"txHash" jsonschema_description:"the on-chain movement's transaction; null for a call, or while none is sent yet"`
	CreatedAt time.Time  `json:"createdAt"`
}

// rowOf is inv's log row, before the side decides key and charge.
func rowOf(inv *store.Invocation) Row {
	r := Row{RequestID: inv.RequestID, Handle: inv.Handle, IntentID: inv.IntentID, Outcome: inv.State, OutcomeCode: inv.OutcomeCode,
		HTTPStatus: inv.HTTPStatus, LatencyMs: inv.LatencyMs, Kind: inv.Kind, Network: inv.Network, TxHash: inv.TxHash, CreatedAt: inv.CreatedAt.UTC()}
	if r.Kind == "" {
		r.Kind = store.KindCall
	}
	if r.Kind != store.KindCall {
		v := tools.USD(inv.ValueMicro)
		r.ValueUsd = &v
	}
	return r
}

// Page is one page of a call log, newest first.
type Page struct {
	Rows []Row  `json:"rows"`
	Next string `json:"next"` // the cursor of the next page, "" on the last
}

// Calls returns one page of the caller's calls, or of the calls to the partner's intents.
func (s *Service) Calls(ctx context.Context, p *tools.Principal, side Side, f Filter) (Page, error) {
	limit := f.Limit
	if limit <= 0 || limit > 100 {
		limit = 25
	}
	if f.Outcome != "" && !slices.Contains(Outcomes, f.Outcome) {
		return Page{}, tools.Errorf(tools.CodeBadInput, "no outcome %q; choose one of the list", f.Outcome)
	}
	if f.Kind != "" && !slices.Contains(Kinds, f.Kind) {
		return Page{}, tools.Errorf(tools.CodeBadInput, "no kind %q; choose one of %s", f.Kind, strings.Join(Kinds, ", "))
	}
	q := reports.CallQuery{IntentID: f.IntentID, State: f.Outcome, Kind: f.Kind, Limit: limit + 1}
	switch side {
	case Caller:
		q.AccountID, q.KeyID = p.AccountID, f.KeyID
		if err := s.wait(ctx, p.AccountID); err != nil {
			return Page{}, err
		}
	case Partner:
		pt, err := s.partners.ByAccount(ctx, p.AccountID)
		if errors.Is(err, store.ErrNotFound) {
			return Page{}, nil // no intents published: no calls
		}
		if err != nil {
			return Page{}, err
		}
		q.PartnerID = pt.ID
		if err := s.wait(ctx, ""); err != nil {
			return Page{}, err
		}
	default:
		return Page{}, tools.Errorf(tools.CodeBadInput, "no call log %q; choose caller or partner", side)
	}
	if f.Cursor != "" {
		at, id, ok := parseCursor(f.Cursor)
		if !ok {
			return Page{}, tools.Errorf(tools.CodeBadInput, "this page link is damaged; start again from the first page")
		}
		q.BeforeAt, q.BeforeID = &at, id
	}
	invs, err := s.reports.Calls(ctx, q)
	if err != nil {
		return Page{}, err
	}
	var out Page
	if len(invs) > limit {
		invs = invs[:limit]
		last := invs[limit-1]
		out.Next = last.CreatedAt.UTC().Format(time.RFC3339Nano) + "_" + last.RequestID
	}
	for _, inv := range invs {
		r := rowOf(inv)
		if side == Caller {
			r.KeyID, r.ChargeMicro = inv.KeyID, CostMicro(inv)
		} else {
			r.ChargeMicro = inv.PartnerFeeMicro
		}
		out.Rows = append(out.Rows, r)
	}
	return out, nil
}

func parseCursor(c string) (time.Time, string, bool) {
	at, id, ok := strings.Cut(c, "_")
	t, err := time.Parse(time.RFC3339Nano, at)
	return t, id, ok && err == nil && id != "" && len(id) <= 64
}

// Detail is one call with its args and result.
type Detail struct {
	Row
	// Caller is who called: the key on the caller's side, the pairwise pseudonym the partner
	// knows on the partner's.
	Caller         string                  `json:"caller"`
	Args           string                  `json:"args"`   // indented JSON
	Answer         string                  `json:"answer"` // indented JSON of what the caller was answered; "" before an answer
	OutcomeMessage string                  `json:"outcomeMessage"`
	Attempts       int                     `json:"attempts"`
	Events         []store.InvocationEvent `json:"events"`
	Receipt        string                  `json:"receipt"` // the signed receipt (indented JSON), "" when none
}

// Call returns one call of the side's log; a call outside it (another account's, another
// partner's intent's) is NOT_FOUND, as one that does not exist.
func (s *Service) Call(ctx context.Context, p *tools.Principal, side Side, requestID string) (Detail, error) {
	notFound := tools.Errorf(tools.CodeNotFound, "no call %s in this log; open one from the list", requestID)
	var inv *store.Invocation
	var intent *partners.Intent // the partner's side: its intent
	var err error
	switch side {
	case Caller:
		if err := s.wait(ctx, p.AccountID); err != nil {
			return Detail{}, err
		}
		inv, err = s.invocations.Get(ctx, p.AccountID, requestID)
	case Partner:
		if err := s.wait(ctx, ""); err != nil {
			return Detail{}, err
		}
		inv, err = s.invocations.ByID(ctx, requestID)
		if err == nil {
			intent, err = s.partners.OwnedIntent(ctx, p.AccountID, inv.IntentID)
			if err == nil && (inv.State == store.InvAwaitingConfirmation || inv.State == store.InvAwaitingPayment) {
				err = store.ErrNotFound // never sent to the partner
			}
		}
	default:
		return Detail{}, notFound
	}
	if errors.Is(err, store.ErrNotFound) {
		return Detail{}, notFound
	}
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Row: rowOf(inv),
		Args: tools.IndentJSON(inv.Args), OutcomeMessage: inv.OutcomeMessage, Attempts: inv.Attempts}
	var answer struct {
		Result  json.RawMessage `json:"result"`
		Receipt json.RawMessage `json:"receipt"`
	}
	if inv.Answer != nil && json.Unmarshal([]byte(*inv.Answer), &answer) == nil && len(answer.Receipt) > 0 && string(answer.Receipt) != "null" {
		d.Receipt = tools.IndentJSON(string(answer.Receipt))
	}
	if side == Partner {
		// The partner sees what it was sent and what it answered, and the caller only as the
		// pseudonym its envelopes carried: not the caller's key, charge, payment or history.
		d.ChargeMicro, d.Caller = inv.PartnerFeeMicro, s.userID(inv.AccountID, intent.PartnerID)
		if len(answer.Result) > 0 {
			d.Answer = tools.IndentJSON(string(answer.Result))
		}
		return d, nil
	}
	d.KeyID, d.ChargeMicro, d.Caller = inv.KeyID, CostMicro(inv), inv.KeyID
	if inv.Answer != nil {
		d.Answer = tools.IndentJSON(*inv.Answer)
	}
	if d.Events, err = s.invocations.Events(ctx, inv.RequestID); err != nil {
		return Detail{}, err
	}
	return d, nil
}
