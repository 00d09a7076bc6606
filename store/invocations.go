package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Invocation states, and what each means for a call that is in it (one table: states).
const (
	InvAwaitingConfirmation = "awaiting_confirmation"
	InvAwaitingPayment      = "awaiting_payment"  // a flat-fee quote waiting for its on-chain authorization
	InvAwaitingApproval     = "awaiting_approval" // a call its owner's policy sent to a human (approvals)
	InvDispatching          = "dispatching"
	InvSucceeded            = "succeeded"
	InvFailed               = "failed"
	InvCancelled            = "cancelled"
	// InvDeclined is a quote the user declined: never dispatched, nothing reserved or spent.
	InvDeclined = "declined"
	// InvOutcomeUnknown is the end of a dispatch nobody finished (a crash, a database loss)
	// and whose outcome could not be learned again: the partner may or may not have acted.
	InvOutcomeUnknown = "outcome_unknown"
)

// State is what a state means for a call in it.
type State struct {
	// Final: the call has ended and its record holds the answer it gave, replayed to anyone
	// who asks again with its requestId.
	Final bool
}

var states = map[string]State{
	InvAwaitingConfirmation: {},
	InvAwaitingPayment:      {},
	InvDispatching:          {},
	InvSucceeded:            {Final: true},
	InvFailed:               {Final: true},
	InvCancelled:            {Final: true},
	InvDeclined:             {Final: true},
	InvOutcomeUnknown:       {Final: true},
}

// StateOf is what state means (the zero State for a state this release does not know).
func StateOf(state string) State { return states[state] }

// Price is what a call was quoted, kept with its record: the most it may cost, by part.
type Price struct {
	ReserveMicro        int64  `bun:"reserve_micro,notnull"`
	MaxPartnerFeeMicro  int64  `bun:"max_partner_fee_micro,notnull"`
	MaxPlatformFeeMicro int64  `bun:"max_platform_fee_micro,notnull"`
	RoutedValueMicro    *int64 `bun:"routed_value_micro"` // USD value the args move; nil when none or not quotable
	GasChain            string `bun:"gas_chain,notnull"`
	GasEstimateMicro    int64  `bun:"gas_estimate_micro,notnull"`
	MaxGasMicro         int64  `bun:"max_gas_micro,notnull"`
}

// Outcome is where a call stands: its state and, once it has ended, how (what the partner
// answered, what was charged and refunded, the answer its caller got). It is written whole
// when the call concludes.
type Outcome struct {
	State             string     `bun:"state,notnull"`
	Attempts          int        `bun:"attempts,notnull"`
	HTTPStatus        *int       `bun:"http_status"`
	LatencyMs         *int       `bun:"latency_ms"` // the partner's answer time (last attempt)
	OutcomeCode       string     `bun:"outcome_code,notnull"`
	OutcomeMessage    string     `bun:"outcome_message,notnull"`
	OutputSchemaValid *bool      `bun:"output_schema_valid"`
	PartnerFeeMicro   int64      `bun:"partner_fee_micro,notnull"`
	PlatformFeeMicro  int64      `bun:"platform_fee_micro,notnull"`
	GasMicro          int64      `bun:"gas_micro,notnull"`
	RefundedMicro     int64      `bun:"refunded_micro,notnull"`
	Answer            *string    `bun:"answer"`              // the JSON answer or error body, replayed to a repeated confirmation
	PayoutBook        string     `bun:"payout_book,notnull"` // the partner fee's book; "" when none was charged
	FinishedAt        *time.Time `bun:"finished_at"`
}

// The kinds of money movement an invocation row records.
const (
	KindCall     = "call"     // a partner intent's call
	KindTopup    = "topup"    // credit bought with an x402 payment to the treasury
	KindX402     = "x402"     // an x402 resource paid from the embedded wallet (x402_fetch)
	KindSend     = "send"     // a wallet_send
	KindProposed = "proposed" // a transaction a partner proposed, signed by the embedded wallet
)

// Invocation is one call of a partner intent, from quote to outcome.
type Invocation struct {
	bun.BaseModel `bun:"table:invocations"`

	RequestID      string `bun:"request_id,pk"`
	AccountID      string `bun:"account_id,notnull"`
	KeyID          string `bun:"key_id,notnull"`
	IntentID       string `bun:"intent_id,notnull"`
	Handle         string `bun:"handle,notnull"`
	Category       string `bun:"category,notnull"`
	IntentRevision int    `bun:"intent_revision,notnull"`
	Args           string `bun:"args,notnull"`
	// MessageHash is the hex SHA-256 of the message (without its handle) a call waiting for its
	// caller or owner was asked with: its confirmation must send the same. nil: not kept.
	MessageHash *string `bun:"message_hash"`
	// Kind is what moved the money (KindCall, KindTopup, KindX402, KindSend, KindProposed);
	// Network and TxHash name an on-chain movement's transaction (nil: none, or not yet), and
	// ValueMicro is its USD value when it was judged (0 for a call: its charge is its fees).
	Kind       string  `bun:"kind,notnull,nullzero,default:'call'"`
	Network    *string `bun:"network"`
	TxHash     *string `bun:"tx_hash"`
	ValueMicro int64   `bun:"value_micro,notnull"`
	Price
	Outcome
	// A call recorded whole in one row (a read on a budget lease) carries its history here, as
	// JSON events, instead of in invocation_events, and the ledger transaction of its batch.
	Trail        *string    `bun:"trail"`
	LedgerTxn    *string    `bun:"ledger_txn"`
	CreatedAt    time.Time  `bun:"created_at,notnull"`
	DispatchedAt *time.Time `bun:"dispatched_at"`
}

// InvocationEvent is one state transition.
type InvocationEvent struct {
	bun.BaseModel `bun:"table:invocation_events"`

	ID        string    `bun:"id,pk"`
	RequestID string    `bun:"request_id,notnull"`
	Seq       int       `bun:"seq,notnull"` // order within the invocation
	State     string    `bun:"state,notnull"`
	Detail    string    `bun:"detail,notnull"`
	At        time.Time `bun:"at,notnull"`
}

// AddEvent appends a transition, numbered after the invocation's last one.
func (q *Q) AddEvent(ctx context.Context, requestID, state, detail string, at time.Time) error {
	return q.write(ctx, q.eventAt(requestID, state, detail, at))
}

// eventAt is AddEvent's statement.
func (q *Q) eventAt(requestID, state, detail string, at time.Time) statement {
	return q.tx.NewRaw(`INSERT INTO invocation_events (id, request_id, seq, state, detail, at)
		SELECT ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ? FROM invocation_events WHERE request_id = ?`,
		RowID(), requestID, state, detail, at, requestID)
}

// Event is one step of an invocation's history.
type Event struct {
	State, Detail string
	At            time.Time
}

// InsertInvocation writes a new invocation row; one naming no kind is a call (the batch
// writer's prepared inserts write every field as it is, not a column's default).
func (q *Q) InsertInvocation(ctx context.Context, inv *Invocation) error {
	if inv.Kind == "" {
		inv.Kind = KindCall
	}
	if q.rec != nil {
		q.rec.Invocation(*inv)
		return nil
	}
	return q.write(ctx, q.tx.NewInsert().Model(inv).Returning("NULL"))
}

// MoveInvocation moves an invocation from state `from` to `to` (stamping dispatched_at when
// `to` is dispatching); moved is false when it was not in state `from` (another call moved it
// first). The row lock makes a concurrent mover wait, then find it moved.
func (q *Q) MoveInvocation(ctx context.Context, requestID, from, to string, at time.Time) (moved bool, _ error) {
	u := q.tx.NewUpdate().Model((*Invocation)(nil)).Set("state = ?", to).
		Where("request_id = ? AND state = ?", requestID, from)
	if to == InvDispatching {
		u = u.Set("dispatched_at = ?", at)
	}
	res, err := q.execNow(ctx, u)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// WriteOutcome writes the outcome of a finished invocation (its Outcome, whole).
func (q *Q) WriteOutcome(ctx context.Context, inv *Invocation) error {
	return q.write(ctx, q.outcomeStmt(inv))
}

// outcomeStmt is WriteOutcome's statement.
func (q *Q) outcomeStmt(inv *Invocation) statement {
	return q.tx.NewUpdate().Model(inv).Column(outcomeColumns...).WherePK()
}

// A call's conclusion is claimed (ClaimEnding), decided by its caller (tools/billing: what its
// hold's Closing is), and written in one go (WriteEnding).

// ClaimEnding claims a dispatching call's record for its outcome: the record moved to state to
// (at) and, when held, its hold's reservation read and locked until the commit (r). claimed
// is false, with nothing changed, when another process concluded the call first; r is nil
// when the call held nothing.
func (q *Q) ClaimEnding(ctx context.Context, requestID, to string, at time.Time, held bool) (r *Reservation, claimed bool, err error) {
	claimed, err = q.MoveInvocation(ctx, requestID, InvDispatching, to, at)
	if err != nil || !claimed || !held {
		return nil, claimed, err
	}
	r, err = q.LockReservation(ctx, requestID)
	return r, true, err
}

// Ending is what a claimed call's conclusion writes, in this order: its hold's close (nil:
// none, or closed already), its attempts' events, its outcome, its webhook events, and its
// last event (Detail).
type Ending struct {
	Invocation *Invocation // carrying its outcome
	Hold       *Closing
	Attempts   []Attempt
	Events     []*WebhookEvent
	Detail     string
}

// WriteEnding writes e inside q's transaction: every statement one whose result nobody reads
// (on PostgreSQL queued for the commit's round trip).
func (q *Q) WriteEnding(ctx context.Context, e Ending) error {
	if q.rec != nil {
		return notRecorded("a call's ending")
	}
	inv := e.Invocation
	at := *inv.FinishedAt
	var record []statement
	for _, a := range e.Attempts {
		record = append(record, q.eventAt(inv.RequestID, "attempt", a.Detail, a.At))
	}
	record = append(record, q.outcomeStmt(inv))
	for _, ev := range e.Events {
		row := *ev // a job run again writes the same rows
		record = append(record, q.eventStmt(&row))
	}
	record = append(record, q.eventAt(inv.RequestID, inv.State, e.Detail, at))
	if e.Hold != nil {
		record = append(q.closingStmts(inv.RequestID, *e.Hold, at), record...) // the hold's close goes first
	}
	return q.writeAll(ctx, record...)
}

// WriteMovement writes the outcome of a finished on-chain movement (its Outcome whole, and its
// network and transaction hash).
func (q *Q) WriteMovement(ctx context.Context, inv *Invocation) error {
	return q.write(ctx, q.tx.NewUpdate().Model(inv).Column(append([]string{"network", "tx_hash"}, outcomeColumns...)...).WherePK())
}

// outcomeColumns are Outcome's columns.
var outcomeColumns = []string{"state", "attempts", "http_status", "latency_ms", "outcome_code", "outcome_message", "output_schema_valid",
	"partner_fee_micro", "platform_fee_micro", "gas_micro", "refunded_micro", "answer", "payout_book", "finished_at"}

// CreateInvocation records a new invocation in its first state (a quote), and with it, in
// the same transaction, what also writes (a flat fee's payment).
func (s *Store) CreateInvocation(ctx context.Context, inv *Invocation, detail string, also ...func(ctx context.Context, q *Q) error) error {
	return s.InTx(ctx, func(ctx context.Context, q *Q) error {
		if err := q.InsertInvocation(ctx, inv); err != nil {
			return err
		}
		for _, f := range also {
			if err := f(ctx, q); err != nil {
				return err
			}
		}
		return q.AddEvent(ctx, inv.RequestID, inv.State, detail, inv.CreatedAt)
	})
}

// Trail encodes events as an invocation's trail (Invocation.Trail).
func Trail(events ...Event) string {
	rows := make([]trailEvent, len(events))
	for i, e := range events {
		rows[i] = trailEvent{State: e.State, Detail: e.Detail, At: e.At.UTC()}
	}
	raw, _ := json.Marshal(rows)
	return string(raw)
}

// TrailEvents decodes an invocation's trail as its events.
func TrailEvents(requestID, trail string) ([]InvocationEvent, error) {
	var rows []trailEvent
	if err := json.Unmarshal([]byte(trail), &rows); err != nil {
		return nil, fmt.Errorf("invocation %s: its trail is not a list of events: %w", requestID, err)
	}
	evs := make([]InvocationEvent, len(rows))
	for i, r := range rows {
		evs[i] = InvocationEvent{ID: fmt.Sprintf("%s/%d", requestID, i+1), RequestID: requestID, Seq: i + 1, State: r.State, Detail: r.Detail, At: r.At}
	}
	return evs, nil
}

type trailEvent struct {
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// Attempt is one call to the partner, recorded with the outcome.
type Attempt struct {
	Detail string
	At     time.Time
}
