package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	invopop "github.com/invopop/jsonschema"
	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	partnerstore "github.com/switchboard-hq/switchboard/store/partners"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// InvokeInput is invoke_partner_message's input.
type InvokeInput struct {
	Message          string            `json:"message" jsonschema:"minLength=2,maxLength=4000" jsonschema_description:"the request in natural language, naming exactly one partner by its @handle, e.g. '@weather forecast for Lisbon'"`
	Args             partners.ArgsDoc  `json:"args,omitempty" jsonschema_description:"structured arguments matching the intent's parametersSchema (from discover); omit for intents that take only {query}"`
	ConfirmRequestID string            `json:"confirmRequestId,omitempty" jsonschema:"format=uuid" jsonschema_description:"for write intents: the requestId of a CONFIRMATION_REQUIRED answer, sent after the user approved it; for flat-fee intents: the requestId of the PAYMENT_REQUIRED quote being paid"`
	Payment          *payments.Payment `json:"payment,omitempty" jsonschema_description:"for flat-fee intents, with confirmRequestId: the signed EIP-3009 authorization of the quote (x402 exact-scheme payload: signature + authorization)"`
	PayWithWallet    bool              `json:"payWithWallet,omitempty" jsonschema_description:"for flat-fee intents, with confirmRequestId and instead of payment: sign the quote with your embedded EVM wallet (the account's signing must be on); sending it is your confirmation"`
	Payer            string            `json:"payer,omitempty" jsonschema:"pattern=^0x[0-9a-fA-F]{40}$" jsonschema_description:"for flat-fee intents, asking for the quote: the wallet that will sign, so the quote's typedData is complete and signable as it is"`
	Decline          bool              `json:"decline,omitempty" jsonschema_description:"for write intents, with confirmRequestId: the user declined that quote. It is closed: nothing is sent (a quote holds no reservation), and confirming it later answers CONFLICT"`
}

// Anything is free-form JSON (the partner's result), relayed byte for byte.
type Anything json.RawMessage

// MarshalJSON writes the JSON as received, null when there was none.
func (a Anything) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return []byte("null"), nil
	}
	return a, nil
}

// UnmarshalJSON keeps the bytes (a stored answer being replayed).
func (a *Anything) UnmarshalJSON(b []byte) error {
	*a = append((*a)[:0], b...)
	return nil
}

// JSONSchema: any JSON value.
func (Anything) JSONSchema() *invopop.Schema {
	return tools.AnyValue("the partner's JSON result, relayed as is (any JSON value)")
}

// InvokeOutput is the partner's reply, attributed to its handle, with what it cost.
type InvokeOutput struct {
	Handle            string                 `json:"handle" jsonschema_description:"the partner that answered"`
	RequestID         string                 `json:"requestId"`
	Success           bool                   `json:"success"`
	Result            Anything               `json:"result" jsonschema_description:"the partner's JSON result, relayed as is (any JSON value)"`
	Charge            billing.Charge         `json:"charge"`
	OutputSchemaValid *bool                  `json:"outputSchemaValid,omitempty" jsonschema_description:"whether the result matched the intent's outputSchema (absent when it has none); a mismatch is relayed but flagged"`
	PartnerError      *PartnerError          `json:"partnerError,omitempty" jsonschema_description:"when success is false: the partner's own answer (e.g. it needs more information); nothing was charged for the partner"`
	Payment           *payments.Receipt      `json:"payment,omitempty" jsonschema_description:"flat-fee intents: the on-chain payment, settled to the partner on success or refunded, with transaction hashes"`
	Receipt           *signing.SignedReceipt `json:"receipt,omitempty" jsonschema_description:"Switchboard's signed receipt of this call (the service key, same scheme as envelopes): verify it with switchboard verify-receipt or the partner kit"`
	Attempts          int                    `json:"attempts"`
	Transactions      []SentTransaction      `json:"transactions,omitempty" jsonschema_description:"when this confirms the transactions a partner proposed (the requestId of their CONFIRMATION_REQUIRED): each as it stands, signed by the embedded wallet"`
	// Task is the task the call runs as, answered in its place (task.go); nil: this is the answer.
	Task *tools.Task `json:"-"`
}

// StartedTask is the task answered in the call's place (tools.Tasked).
func (o InvokeOutput) StartedTask() *tools.Task { return o.Task }

// X402Payment is the call's on-chain payment, for the REST adapter's PAYMENT-RESPONSE header.
func (o InvokeOutput) X402Payment() *payments.Receipt { return o.Payment }

// PartnerError is a partner's failure answer, relayed to the caller as the partner's words.
type PartnerError struct {
	Code    string `json:"code" jsonschema_description:"the partner's short code, e.g. BAD_INPUT"`
	Message string `json:"message" jsonschema_description:"the partner's message: ask the user or refine the call"`
}

// ReceiptInput names a call of one of the caller's intents.
type ReceiptInput struct {
	RequestID string `json:"requestId" jsonschema:"format=uuid" jsonschema_description:"the call's requestId (the envelope's requestId)"`
}

// receiptTool lets a partner fetch the signed receipt of a call to one of its intents.
func (s *Service) receiptTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "partner_receipt",
		Title: "Partner call receipt",
		Description: "The signed receipt of a call to one of your intents, by its requestId: handle, the caller's pseudonymous userId for you, " +
			"charges, timestamps and the SHA-256 of the result Switchboard relayed, signed with the service key (verify with switchboard verify-receipt or the partner kit).",
		Access:             tools.RequireScope(tools.ScopePublish),
		Annotations:        tools.Annotations{ReadOnly: tools.Bool(true), Destructive: tools.Bool(false), Idempotent: true, OpenWorld: tools.Bool(false)},
		ReadsOtherAccounts: true,
	}, func(ctx context.Context, c *tools.Caller, in ReceiptInput) (signing.SignedReceipt, error) {
		notFound := tools.Errorf(tools.CodeNotFound, "no receipt for request %s among your intents' calls (receipts exist for answered calls)", in.RequestID)
		inv, err := s.invocations.ByID(ctx, in.RequestID)
		if errors.Is(err, store.ErrNotFound) {
			return signing.SignedReceipt{}, notFound
		}
		if err != nil {
			return signing.SignedReceipt{}, err
		}
		intent, err := s.partners.Intent(ctx, inv.IntentID)
		if err != nil || intent.OwnerID != c.AccountID() || inv.Answer == nil {
			return signing.SignedReceipt{}, notFound
		}
		var out InvokeOutput
		if json.Unmarshal([]byte(*inv.Answer), &out) != nil || out.Receipt == nil {
			return signing.SignedReceipt{}, notFound
		}
		return *out.Receipt, nil
	})
}

// Tools returns invoke_partner_message and partner_receipt, and the unlisted task_get and
// task_cancel.
func (s *Service) Tools() []*tools.Tool {
	return append([]*tools.Tool{s.receiptTool(), s.invokeTool()}, s.taskTools()...)
}

func (s *Service) invokeTool() *tools.Tool {
	return tools.New(tools.Def{
		Name:  "invoke_partner_message",
		Title: "Invoke a partner by @handle",
		Description: "Call a marketplace partner named by its @handle in the message (find handles with discover). " +
			"Intents whose parametersSchema is just {query} get the message text; others need `args` matching their parametersSchema. " +
			"Write intents (SWAP, SEND, BRIDGE, ...) answer CONFIRMATION_REQUIRED first with the exact args and the most it can cost: " +
			"ask the user, then call again with confirmRequestId. You are charged only when the partner succeeds; failures refund the reservation. " +
			"When the partner answers success false (e.g. it needs more information), the result says so in partnerError: ask the user or refine the call.",
		Access:              tools.RequireScope(tools.ScopePartner),
		TakesIdempotencyKey: true,
		TakesPayment:        true,
		TakesDecision:       true, // a write's quote and an owner's approval ask first (Error.Continue)
		AnswersTasks:        true, // a long-running intent's call, for a caller that takes a task (task.go)
		Annotations:         tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), OpenWorld: tools.Bool(true)},
	}, s.invoke)
}

var handleRe = regexp.MustCompile(`(?i)(^|[^a-z0-9_@.-])(@[a-z0-9_-]{3,32})\b`)

// FindHandle returns the one @handle in a message and the message without it.
func FindHandle(message string) (handle, rest string, err error) {
	found := map[string]bool{}
	var first string
	for _, m := range handleRe.FindAllStringSubmatch(message, -1) {
		h := strings.ToLower(m[2])
		if !found[h] {
			found[h] = true
			if first == "" {
				first = h
			}
		}
	}
	switch len(found) {
	case 0:
		return "", "", tools.Errorf(tools.CodeBadInput, "the message names no partner: include one @handle (find one with discover)")
	case 1:
	default:
		return "", "", tools.Errorf(tools.CodeBadInput, "the message names %d partners; name exactly one @handle per call", len(found))
	}
	rest = handleRe.ReplaceAllStringFunc(message, func(m string) string {
		i := strings.LastIndex(m, "@")
		return m[:i]
	})
	return first, strings.Join(strings.Fields(rest), " "), nil
}

func (s *Service) invoke(ctx context.Context, c *tools.Caller, in InvokeInput) (InvokeOutput, error) {
	if d := c.Decision; d != nil { // the door's answer to a continuation: the same as sending it in the args
		in.ConfirmRequestID, in.Decline = d.RequestID, d.Decline
	}
	handle, rest, err := FindHandle(in.Message)
	if err != nil {
		return InvokeOutput{}, err
	}
	intent, err := s.callable(ctx, c, handle)
	if err != nil {
		return InvokeOutput{}, err
	}
	cl := s.plan(intent, c.AccountID())
	cl.bill, cl.said = s.billing.For(c.Principal, cl.spend()), rest
	if need := cl.rule.Scope; need != "" && !c.Principal.HasScope(need) {
		return InvokeOutput{}, tools.Errorf(tools.CodeForbidden, "%s intents need scope %q as well as \"partner\"; use a key that has it", intent.Category, need)
	}
	return s.wayOf(c, cl, in).take(ctx, c, cl, in)
}

// callable finds an intent the caller may invoke: active ones for everybody, inactive ones
// only for their publisher; archived and unknown are NOT_FOUND.
func (s *Service) callable(ctx context.Context, c *tools.Caller, handle string) (*partnerstore.Intent, error) {
	intent, err := s.cfg.Intents(ctx, handle)
	if errors.Is(err, store.ErrNotFound) {
		return nil, tools.Errorf(tools.CodeNotFound, "no partner %s; use discover to find one by what it does", handle)
	}
	if err != nil {
		return nil, err
	}
	if err := partners.CanInvoke(intent, c.AccountID()); err != nil {
		return nil, err
	}
	if intent.IsCoreIntent {
		return nil, tools.Errorf(tools.CodeBadInput, "%s is a built-in capability, not a partner: call the tool %s directly", handle, strings.TrimPrefix(handle, "@"))
	}
	return intent, nil
}
