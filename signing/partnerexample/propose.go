package partnerexample

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"strings"

	"github.com/switchboard-hq/switchboard/signing"
)

// The example write intent (issue 49 item 2): a SEND intent with MUTATES_USER_FUNDS whose
// partner never holds the user's key. It answers result.transactions, one ERC-20 transfer of
// the args' amount to the args' recipient, which Switchboard simulates, shows decoded in a
// confirmation, judges by the owner's policies, signs with the user's embedded wallet and
// broadcasts. The calldata is written out here (transfer(address,uint256)) so the kit stays
// on package signing alone.

// SendPath is the REST path of the example write intent.
const SendPath = "/send"

// SendHandle is the example write intent's @handle in the test environment.
const SendHandle = "@demo_send"

// SendParametersSchema is the parametersSchema to publish for the write intent: the recipient
// (an EVM address) and the amount, a decimal string in the token's whole units ("2.5").
const SendParametersSchema = `{"type":"object","properties":{"to":{"type":"string","pattern":"^0x[0-9a-fA-F]{40}$"},"amount":{"type":"string","pattern":"^[0-9]+(\\.[0-9]+)?$"}},"required":["to","amount"],"additionalProperties":false}`

// Token is the ERC-20 the write intent proposes transfers of.
type Token struct {
	Chain    string // a Switchboard balances chain name: "base", "ethereum", ...
	Address  string // the token contract, 0x...
	Symbol   string // for the summary: "USDC"
	Decimals int
}

// Transaction is one proposed EVM transaction, as a partner answers it in
// result.transactions: the chain, the contract called, the calldata (0x hex) and the native
// value sent with it (wei, a decimal integer string).
type Transaction struct {
	Chain string `json:"chain"`
	To    string `json:"to"`
	Data  string `json:"data"`
	Value string `json:"value"`
}

// transferSelector is transfer(address,uint256).
const transferSelector = "a9059cbb"

var evmAddress = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)

// TransferCalldata is the calldata of an ERC-20 transfer of units to `to` (0x hex).
func TransferCalldata(to string, units *big.Int) (string, error) {
	if !evmAddress.MatchString(to) {
		return "", fmt.Errorf("%q is not an EVM address (0x and 40 hex digits)", to)
	}
	if units.Sign() <= 0 || units.BitLen() > 256 {
		return "", fmt.Errorf("amount %s is not a positive uint256", units)
	}
	word := func(hexDigits string) string { return strings.Repeat("0", 64-len(hexDigits)) + hexDigits }
	return "0x" + transferSelector + word(strings.ToLower(to[2:])) + word(units.Text(16)), nil
}

// Units reads a decimal amount ("2.5") as token units with decimals, exactly: more fraction
// digits than the token has are refused, never rounded.
func Units(amount string, decimals int) (*big.Int, error) {
	whole, frac, _ := strings.Cut(amount, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || strings.Contains(amount, ".") && frac == "" {
		return nil, fmt.Errorf("amount %q is not a decimal number such as \"2.5\"", amount)
	}
	if len(frac) > decimals {
		return nil, fmt.Errorf("amount %q has more than the token's %d decimals", amount, decimals)
	}
	n, _ := new(big.Int).SetString(whole+frac+strings.Repeat("0", decimals-len(frac)), 10)
	if n.Sign() <= 0 {
		return nil, fmt.Errorf("amount %q is not positive", amount)
	}
	return n, nil
}

// NewSendHandler returns the REST endpoint of the example write intent for tok: args
// {to, amount} answer {"success":true,"result":{"transactions":[{chain, to: the token, data:
// transfer(to, amount), value: "0"}],"summary":...}} reporting costMicro, and replay their
// first answer to duplicates of a requestId for 60 s.
func NewSendHandler(v *signing.Verifier, tok Token, costMicro int64) http.Handler {
	return newSend(v, Config{CostMicro: costMicro, Send: &tok})
}

func newSend(v *signing.Verifier, c Config) http.Handler {
	return signing.Middleware(v, signing.DedupeMiddleware(signing.NewResponseDedupe(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveSend(w, r, c)
	})))
}

func serveSend(w http.ResponseWriter, r *http.Request, c Config) {
	env, ok := signing.EnvelopeFromContext(r.Context())
	if !ok {
		signing.WriteFailure(w, http.StatusUnauthorized, signing.CodeUnauthorized, "unverified request")
		return
	}
	verified(r.Context(), c.Log, env.RequestID)
	var args struct {
		To     string `json:"to"`
		Amount string `json:"amount"`
	}
	if err := json.Unmarshal(env.Args, &args); err != nil || args.To == "" || args.Amount == "" {
		signing.WriteFailure(w, http.StatusBadRequest, signing.CodeBadInput, `args need "to" (an EVM address) and "amount" (a decimal string), e.g. {"to":"0x...","amount":"2.5"}`)
		return
	}
	tok := c.Send
	units, err := Units(args.Amount, tok.Decimals)
	if err != nil {
		signing.WriteFailure(w, http.StatusBadRequest, signing.CodeBadInput, err.Error())
		return
	}
	data, err := TransferCalldata(args.To, units)
	if err != nil {
		signing.WriteFailure(w, http.StatusBadRequest, signing.CodeBadInput, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, signing.Charging(map[string]any{
		"transactions": []Transaction{{Chain: tok.Chain, To: strings.ToLower(tok.Address), Data: data, Value: "0"}},
		"summary":      fmt.Sprintf("Send %s %s to %s on %s", args.Amount, tok.Symbol, args.To, tok.Chain),
		"requestId":    env.RequestID,
	}, c.CostMicro))
}
