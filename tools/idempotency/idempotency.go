// Package idempotency is the Idempotency-Key rule, for every door: a call that carries a key
// (REST's Idempotency-Key header, MCP's idempotencyKey argument) runs once per caller, tool
// and key for 24 hours. The same key with the same input answers the first call's recorded
// answer without running again; with another input it is CONFLICT; while the first call runs,
// CONFLICT with Retry-After. It wraps the tools (tools.Tool.Wrapped), so no tool carries it.
package idempotency

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	idem "github.com/switchboard-hq/switchboard/store/idempotency"
	"github.com/switchboard-hq/switchboard/store/invocations"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

const (
	// Property is the input property (and what REST's Idempotency-Key header becomes).
	Property = tools.IdempotencyKeyProperty
	// MaxKey is the longest key, in characters.
	MaxKey = tools.MaxIdempotencyKey
	// Window is how long a key answers its first call's answer.
	Window = 24 * time.Hour
	// Abandoned is how long a call may stay in flight with nothing recorded before a retry
	// runs it again: its process died (kill -9) before it answered. It outlasts the longest
	// partner call (2 tries of the 120 s maximum timeout), which on a budget lease records
	// nothing until the partner answers. A call of invoke_partner_message whose invocation
	// is recorded is never run again: a retry waits for the record's outcome (the sweeper
	// concludes an abandoned dispatch).
	Abandoned = 5 * time.Minute
	// RetryAfter is what a retry of a call in flight is told to wait.
	RetryAfter = 2 * time.Second
)

// schema is the idempotencyKey property every wrapped tool publishes.
var schema = json.RawMessage(fmt.Sprintf(`{"type":"string","minLength":1,"maxLength":%d,"description":`+
	`"optional: a unique key for this call (a UUID): retrying with the same key and the same input within 24 hours answers the first call's answer instead of running again; `+
	`the same key with a different input is CONFLICT. Over REST, the Idempotency-Key header"}`, MaxKey))

// Config configures the rule.
type Config struct {
	// Sealer seals the stored answers under the master key, as wallet keys are (they may hold
	// secrets shown once, such as a new API key or webhook secret), so a master key rotation's
	// re-seal moves them too (Reseal).
	Sealer *wallets.Sealer
	// LegacyKey (32 bytes), when set, opens the answers earlier releases sealed with a key
	// derived from the server secret (master_key_id ''): a previous release's rows, for their
	// 24 hours, until Reseal moves them. Nothing new is sealed with it.
	LegacyKey []byte
}

// Service keeps idempotency keys.
type Service struct {
	keys        idem.Keys
	st          *store.Store
	accounts    accounts.Accounts
	invocations invocations.Invocations
	sealer      *wallets.Sealer
	legacy      cipher.AEAD // nil: no legacy rows open
	now         func() time.Time
	log         *slog.Logger
}

// NewService builds the rule on d's store.
func NewService(cfg Config, d service.Deps) (*Service, error) {
	d = d.WithDefaults()
	if cfg.Sealer == nil {
		return nil, errors.New("idempotency: no sealer for the stored answers")
	}
	s := &Service{keys: idem.New(d.Store), st: d.Store, accounts: accounts.New(d.Store), invocations: invocations.New(d.Store), sealer: cfg.Sealer, now: d.Now, log: d.Log}
	if cfg.LegacyKey != nil {
		block, err := aes.NewCipher(cfg.LegacyKey)
		if err != nil {
			return nil, fmt.Errorf("idempotency legacy seal key: %w", err)
		}
		if s.legacy, err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Wrap returns ts with every tool that declares TakesIdempotencyKey taking idempotencyKey;
// the others as they are. A keyless tool that declares it is refused: it has no caller to
// keep a key for (agent_signup is idempotent per e-mail, and agent_verify's answer is a key
// shown once, never stored).
func (s *Service) Wrap(ts []*tools.Tool) ([]*tools.Tool, error) {
	out := make([]*tools.Tool, 0, len(ts))
	for _, t := range ts {
		if !t.TakesIdempotencyKey {
			out = append(out, t)
			continue
		}
		if !t.Access.NeedsKey() {
			return nil, fmt.Errorf("tool %s takes an idempotency key but needs no API key: a key is kept per caller, and a keyless call has none", t.Name)
		}
		w, err := t.Wrapped(map[string]json.RawMessage{Property: schema}, func(next tools.Run) tools.Run {
			return func(ctx context.Context, c *tools.Caller, args []byte) (any, error) {
				return s.call(ctx, t, c, args, next)
			}
		})
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Sweep forgets the keys past their 24 hours.
func (s *Service) Sweep(ctx context.Context) error {
	_, err := s.keys.Sweep(ctx, s.now().UTC())
	return err
}

// call runs one call of t: once per key.
func (s *Service) call(ctx context.Context, t *tools.Tool, c *tools.Caller, args []byte, next tools.Run) (any, error) {
	key, input, hash, err := split(t.Name, args)
	if err != nil || key == "" {
		if err != nil {
			return nil, err
		}
		return next(ctx, c, args)
	}
	if c.Decision != nil {
		// The answer to the keyed call's question (a quote confirmed or declined, an approval
		// checked) goes on with the request that call recorded, which answers its outcome
		// however often it is asked: the key's own answer stays the question, and a retry of
		// the decision runs the decision again.
		return next(ctx, c, input)
	}
	p := c.Principal
	now := s.now().UTC()
	run := &idem.Key{Scope: p.AccountID + "/" + p.ID(), Tool: t.Name, IdemKey: key, RequestHash: hash,
		CallID: signing.NewRequestID(), RunID: uuid.NewString(), State: idem.InFlight,
		CreatedAt: now, StartedAt: now, ExpiresAt: now.Add(Window)}
	held, inserted, err := s.keys.Begin(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("record idempotency key: %w", err)
	}
	if !inserted {
		if held.RequestHash != hash {
			return nil, tools.Errorf(tools.CodeConflict, "the Idempotency-Key %q was already used for a different %s call in the last 24 hours; "+
				"send a new key for a new call, or the first call's exact input to get its answer", key, t.Name).
				WithDetails(map[string]any{"idempotencyKey": key})
		}
		if held.State == idem.Done {
			return s.replay(t, held)
		}
		var done bool
		var out any
		if done, out, err = s.inFlight(ctx, t, c, held, run, linkOf(input, held.CallID)); done {
			return out, err
		}
	}
	cc := *c
	cc.CallID = run.CallID
	out, err := next(ctx, &cc, input)
	s.record(context.WithoutCancel(ctx), t, c, run, linkOf(input, run.CallID), out, err)
	return out, err
}

// linkOf is the requestId of the recorded call (invocation) a call in flight is linked to:
// the one its input confirms (invoke's confirmRequestId: a confirmation acts on the quote's
// record), or else the CallID it was given, which a new call records itself under.
func linkOf(input []byte, callID string) string {
	var in struct {
		ConfirmRequestID string `json:"confirmRequestId"`
	}
	if json.Unmarshal(input, &in) == nil && in.ConfirmRequestID != "" {
		return in.ConfirmRequestID
	}
	return callID
}

// inFlight answers a retry of a call in flight: its recorded outcome when its invocation
// (link) has concluded, CONFLICT while it may still be running; or takes the call over (done
// false, run set to go) when its process died before the call went out.
func (s *Service) inFlight(ctx context.Context, t *tools.Tool, c *tools.Caller, held, run *idem.Key, link string) (done bool, out any, err error) {
	age := s.now().UTC().Sub(held.StartedAt)
	inv, err := s.linked(ctx, c, link)
	switch {
	case err == nil && store.StateOf(inv.State).Final && inv.Answer != nil:
		// The call concluded (by its process, or by the sweeper after a crash): its record is the answer.
		out, answerErr := s.fromRecord(t, []byte(*inv.Answer))
		if code, sealed, mk, ok := s.seal(held, out, answerErr); ok {
			if err := s.keys.Finish(ctx, held, code, sealed, mk); err != nil {
				s.log.WarnContext(ctx, "idempotency: record a concluded call's answer", "tool", t.Name, "err", err)
			}
		}
		return true, out, answerErr
	case err == nil && age > Abandoned && waiting(inv.State):
		// Nothing went out: the answer lost was a quote, which holds nothing (quote again, under
		// a new requestId), or a confirmation that died before its dispatch (confirm it now).
	case err == nil:
		return true, nil, busy(held, age, "its call "+link+" is "+inv.State)
	case !errors.Is(err, store.ErrNotFound):
		return true, nil, err
	case age <= Abandoned:
		return true, nil, busy(held, age, "")
	default:
		run.CallID = held.CallID // nothing recorded: run again as the same call
	}
	ok, err := s.keys.TakeOver(ctx, held, run)
	if err != nil {
		return true, nil, err
	}
	if !ok {
		return true, nil, busy(held, 0, "another retry took it over")
	}
	s.log.InfoContext(ctx, "idempotency: a call abandoned in flight runs again", "tool", t.Name, "callId", run.CallID, "age", age.Round(time.Second))
	return false, nil, nil
}

// linked reads the invocation a call is linked to, when the caller may act on it (its own
// key's, or a key's minted under it, as dispatch allows): another key's is not found, so a
// retry never answers with it.
func (s *Service) linked(ctx context.Context, c *tools.Caller, link string) (*store.Invocation, error) {
	inv, err := s.invocations.Get(ctx, c.AccountID(), link)
	if err != nil || c.Principal.Method == tools.AuthSession || inv.KeyID == c.Principal.KeyID {
		return inv, err
	}
	under, err := s.accounts.KeyUnder(ctx, c.AccountID(), inv.KeyID, c.Principal.KeyID)
	if err != nil {
		return nil, err
	}
	if !under {
		return nil, store.ErrNotFound
	}
	return inv, nil
}

func busy(held *idem.Key, age time.Duration, why string) *tools.Error {
	msg := fmt.Sprintf("a call with the Idempotency-Key %q is still in flight (started %d s ago)", held.IdemKey, int(age.Seconds()))
	if why != "" {
		msg += ": " + why
	}
	e := tools.Errorf(tools.CodeConflict, "%s; retry in %d s with the same key and input for its answer, or send a new key for a new call",
		msg, int(RetryAfter.Seconds())).
		WithDetails(map[string]any{"idempotencyKey": held.IdemKey, "state": idem.InFlight, "retryAfterSeconds": int(RetryAfter.Seconds())})
	e.RetryAfter = RetryAfter
	return e
}

// record keeps a run's answer. An answer that says nothing ran or nothing is known yet
// (UNAVAILABLE, RATE_LIMITED, INTERNAL), one that asks to be asked again later (it carries a
// Retry-After: APPROVAL_PENDING) and a flat-fee quote (PAYMENT_REQUIRED, which holds nothing)
// are not kept: the row is released so the key can run again, unless the call it is linked to
// went out (its invocation is past waiting for its caller or owner), whose outcome a retry
// answers.
func (s *Service) record(ctx context.Context, t *tools.Tool, c *tools.Caller, run *idem.Key, link string, out any, err error) {
	if err == nil && tools.StartedTask(out) != nil {
		// A task answers later: the key stays in flight, and a retry answers its invocation's
		// outcome once it has concluded (inFlight), as after a crash.
		return
	}
	e := tools.Translate(err)
	if e != nil && !kept(e) {
		inv, ierr := s.linked(ctx, c, link)
		if errors.Is(ierr, store.ErrNotFound) || (ierr == nil && waiting(inv.State)) {
			if ierr = s.keys.Release(ctx, run); ierr != nil {
				s.log.WarnContext(ctx, "idempotency: release a key", "tool", t.Name, "err", ierr)
			}
		}
		return
	}
	code, sealed, mk, ok := s.seal(run, out, err)
	if !ok {
		return
	}
	if ferr := s.keys.Finish(ctx, run, code, sealed, mk); ferr != nil {
		// The answer is still given; a retry waits for Abandoned, then finds the invocation
		// (invoke) or runs again.
		s.log.WarnContext(ctx, "idempotency: record an answer", "tool", t.Name, "err", ferr)
	}
}

func kept(e *tools.Error) bool {
	switch e.Code {
	case tools.CodeUnavailable, tools.CodeRateLimited, tools.CodeInternal, tools.CodePaymentRequired:
		return false
	}
	return e.RetryAfter == 0
}

// waiting reports whether a call in state has sent nothing yet: it waits for its caller (a
// quote) or for its owner (an approval).
func waiting(state string) bool {
	return state == store.InvAwaitingConfirmation || state == store.InvAwaitingPayment || state == store.InvAwaitingApproval
}

// stored is a sealed answer's plaintext: the result or the error.
type stored struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *tools.Error    `json:"error,omitempty"`
	// Continue is the error's continuation (a quote, an approval), which the error's wire
	// shape leaves out: a replayed question is asked again as the first was.
	Continue *tools.Continuation `json:"continue,omitempty"`
}

// seal seals an answer under the current master key, bound to its row (aad).
func (s *Service) seal(k *idem.Key, out any, err error) (code string, sealed []byte, masterKeyID string, ok bool) {
	var v stored
	if e := tools.Translate(err); e != nil {
		v.Error, v.Continue, code = e, e.Continue, string(e.Code)
	} else {
		raw, merr := json.Marshal(out)
		if merr != nil {
			s.log.Warn("idempotency: an answer that is not JSON", "tool", k.Tool, "err", merr)
			return "", nil, "", false
		}
		v.Result = raw
	}
	plain, _ := json.Marshal(v)
	defer clear(plain)
	sealed, masterKeyID = s.sealer.Seal(plain, aad(k))
	return code, sealed, masterKeyID, true
}

// open opens a done row's answer: under the master key that sealed it, or under the legacy
// key for a row an earlier release sealed.
func (s *Service) open(k *idem.Key) ([]byte, error) {
	if k.MasterKeyID != "" {
		return s.sealer.Open(k.Answer, k.MasterKeyID, aad(k))
	}
	if s.legacy == nil {
		return nil, errors.New("sealed with the server secret's key, which is not configured")
	}
	n := s.legacy.NonceSize()
	if len(k.Answer) < n {
		return nil, errors.New("no stored answer")
	}
	return s.legacy.Open(nil, k.Answer[:n], k.Answer[n:], legacyAAD(k))
}

// replay answers a done row's answer.
func (s *Service) replay(t *tools.Tool, k *idem.Key) (any, error) {
	plain, err := s.open(k)
	if err != nil {
		return nil, fmt.Errorf("idempotency key %s of %s: open the stored answer: %w", k.IdemKey, t.Name, err)
	}
	defer clear(plain)
	var v stored
	if err := json.Unmarshal(plain, &v); err != nil {
		return nil, err
	}
	if v.Error != nil {
		v.Error.Continue = v.Continue
		return nil, v.Error
	}
	return t.DecodeOutput(v.Result)
}

// fromRecord reads an invocation's stored answer: the error it answered, or its result.
func (s *Service) fromRecord(t *tools.Tool, answer []byte) (any, error) {
	var body tools.Body
	if json.Unmarshal(answer, &body) == nil && body.Error != nil {
		return nil, body.Error
	}
	return t.DecodeOutput(answer)
}

// aad binds a sealed answer to its row, and to its use: the master key seals wallet and
// service keys too, so an answer never opens as one of those (or one as an answer).
func aad(k *idem.Key) []byte {
	return []byte("idempotency answer\x00" + k.Scope + "\x00" + k.Tool + "\x00" + k.IdemKey)
}

// legacyAAD is what earlier releases bound their answers with (under the legacy key alone).
func legacyAAD(k *idem.Key) []byte { return []byte(k.Scope + "\x00" + k.Tool + "\x00" + k.IdemKey) }

// ResealBatch is how many answers Reseal reads at a time.
const ResealBatch = 500

// Reseal seals every answer still under another master key (or the legacy key) again under
// the current one, each row on its own conditional update (a row a new run or another re-seal
// changed since it was read is left as it is): stopped anywhere, running it again carries on.
// Rows past their 24 hours are left to the sweep. It returns how many rows it moved and the
// rows no configured key opens.
func (s *Service) Reseal(ctx context.Context) (resealed int, unopenable []string, err error) {
	current := s.sealer.Current()
	var after *idem.Key
	for {
		ks, err := s.keys.SealedElsewhere(ctx, current, s.now().UTC(), after, ResealBatch)
		if err != nil {
			return resealed, unopenable, fmt.Errorf("list idempotency answers to re-seal: %w", err)
		}
		if len(ks) == 0 {
			return resealed, unopenable, nil
		}
		for _, k := range ks {
			after = k
			plain, err := s.open(k)
			if err != nil {
				unopenable = append(unopenable, fmt.Sprintf("idempotency answer of %s for %s (master key %q): %v", k.Tool, k.Scope, k.MasterKeyID, err))
				continue
			}
			sealed, to := s.sealer.Seal(plain, aad(k))
			clear(plain)
			changed, err := s.keys.Reseal(ctx, k, sealed, to)
			if err != nil {
				return resealed, unopenable, fmt.Errorf("re-seal the idempotency answer of %s for %s: %w", k.Tool, k.Scope, err)
			}
			if changed {
				resealed++
			}
		}
	}
}

// SealedElsewhere counts the answers, not past their 24 hours, still under another master key
// (or the legacy key) than the current one.
func (s *Service) SealedElsewhere(ctx context.Context) (int, error) {
	return s.keys.CountSealedElsewhere(ctx, s.sealer.Current(), s.now().UTC())
}

// split takes the key out of the arguments: the key ("" when none), the input without it,
// and the hex SHA-256 of the tool's name and that input in canonical JSON.
func split(tool string, args []byte) (key string, input []byte, hash string, err error) {
	if !bytes.Contains(args, []byte(Property)) && !bytes.Contains(args, []byte(`\u`)) {
		return "", args, "", nil // no key, not even escaped: no second decode on the hot path
	}
	v, err := tools.DecodeJSON(args)
	if err != nil {
		return "", nil, "", tools.Errorf(tools.CodeBadInput, "arguments are not valid JSON: %v", err)
	}
	m, _ := v.(map[string]any)
	raw, present := m[Property]
	if !present {
		return "", args, "", nil
	}
	key, _ = raw.(string)
	if key == "" || len([]rune(key)) > MaxKey {
		return "", nil, "", tools.Errorf(tools.CodeBadInput, "the idempotency key must be 1 to %d characters (a UUID is a good key)", MaxKey)
	}
	delete(m, Property)
	if input, err = json.Marshal(m); err != nil {
		return "", nil, "", err
	}
	canon, err := signing.Canonicalize(input)
	if err != nil {
		return "", nil, "", tools.Errorf(tools.CodeBadInput, "arguments: %v", err)
	}
	sum := sha256.Sum256(append([]byte(tool+"\n"), canon...))
	return key, input, hex.EncodeToString(sum[:]), nil
}
