package payments

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// What x402_fetch reads and writes of x402 as a buyer: a seller's 402 (version 2's
// PAYMENT-REQUIRED header, version 1's JSON body), the payment it sends back (PAYMENT-SIGNATURE,
// or X-PAYMENT for version 1), and the seller's settlement (PAYMENT-RESPONSE, X-PAYMENT-RESPONSE).

// offered is a seller's 402 as read: its version, its resource and its offers as sent (raw,
// echoed back as the payment's accepted).
type offered struct {
	Version  int
	Resource json.RawMessage
	Accepts  []offer
}

// offer is one accepts[] entry, with the fields a buyer judges.
type offer struct {
	Raw     json.RawMessage
	Scheme  string
	Network string
	Asset   string
	PayTo   string
	Amount  string // atomic units (version 1: maxAmountRequired)
	Timeout int64  // maxTimeoutSeconds
}

// maxOfferBytes bounds a PAYMENT-REQUIRED header or 402 body read as JSON.
const maxOfferBytes = 64 << 10

// readOffers reads the payment a 402 asks for: the PAYMENT-REQUIRED header (version 2), else a
// version 1 JSON body. ok is false when neither is there.
func readOffers(h http.Header, body []byte) (offered, bool, error) {
	var raw []byte
	if v := h.Get("PAYMENT-REQUIRED"); v != "" {
		if len(v) > maxOfferBytes {
			return offered{}, false, fmt.Errorf("PAYMENT-REQUIRED is %d bytes", len(v))
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			return offered{}, false, fmt.Errorf("PAYMENT-REQUIRED is not base64: %w", err)
		}
		raw = b
	} else if len(body) > 0 && len(body) <= maxOfferBytes && json.Valid(body) {
		raw = body
	} else {
		return offered{}, false, nil
	}
	var pr struct {
		X402Version int               `json:"x402Version"`
		Resource    json.RawMessage   `json:"resource"`
		Accepts     []json.RawMessage `json:"accepts"`
	}
	if err := json.Unmarshal(raw, &pr); err != nil {
		return offered{}, false, fmt.Errorf("the payment requirements are not x402 JSON: %w", err)
	}
	if pr.X402Version != 1 && pr.X402Version != 2 {
		return offered{}, false, nil
	}
	out := offered{Version: pr.X402Version, Resource: pr.Resource}
	for _, a := range pr.Accepts {
		var o struct {
			Scheme            string `json:"scheme"`
			Network           string `json:"network"`
			Asset             string `json:"asset"`
			PayTo             string `json:"payTo"`
			Amount            string `json:"amount"`
			MaxAmountRequired string `json:"maxAmountRequired"`
			MaxTimeoutSeconds int64  `json:"maxTimeoutSeconds"`
		}
		if json.Unmarshal(a, &o) != nil {
			continue // an offer of a shape we do not know is one we do not take
		}
		amount := o.Amount
		if pr.X402Version == 1 {
			amount = o.MaxAmountRequired
		}
		out.Accepts = append(out.Accepts, offer{Raw: a, Scheme: o.Scheme, Network: v1Network(o.Network), Asset: o.Asset, PayTo: o.PayTo, Amount: amount, Timeout: o.MaxTimeoutSeconds})
	}
	return out, true, nil
}

// v1Networks are version 1's network names of the EVM chains, as CAIP-2 ids.
var v1Networks = map[string]string{"base": "eip155:8453", "base-sepolia": "eip155:84532", "ethereum": "eip155:1", "sepolia": "eip155:11155111",
	"polygon": "eip155:137", "polygon-amoy": "eip155:80002", "avalanche": "eip155:43114", "avalanche-fuji": "eip155:43113", "arbitrum": "eip155:42161", "optimism": "eip155:10"}

func v1Network(n string) string {
	if id, ok := v1Networks[n]; ok {
		return id
	}
	return n
}

// atomic reads an offer's amount (a decimal integer string of the token's units).
func (o offer) atomic() (int64, bool) {
	n, err := strconv.ParseInt(o.Amount, 10, 64)
	return n, err == nil && n > 0
}

// paymentPayload is the PaymentPayload for offer o of 402 of, and the header its version
// sends it in.
func paymentPayload(of offered, o offer, pay *Payment) (string, map[string]any) {
	payload := map[string]any{"signature": pay.Signature, "authorization": pay.Authorization}
	if of.Version == 1 {
		var v1 struct {
			Network string `json:"network"`
		}
		_ = json.Unmarshal(o.Raw, &v1)
		return "X-PAYMENT", map[string]any{"x402Version": 1, "scheme": o.Scheme, "network": v1.Network, "payload": payload}
	}
	pp := map[string]any{"x402Version": 2, "accepted": o.Raw, "payload": payload}
	if len(of.Resource) > 0 && string(of.Resource) != "null" {
		pp["resource"] = of.Resource
	}
	return "PAYMENT-SIGNATURE", pp
}

// paymentHeader is the payment for offer o of 402 of, in its version's header: name and value.
func paymentHeader(of offered, o offer, pay *Payment) (string, string, error) {
	name, pp := paymentPayload(of, o, pay)
	raw, err := json.Marshal(pp)
	if err != nil {
		return "", "", err
	}
	return name, base64.StdEncoding.EncodeToString(raw), nil
}

// settled is a seller's settlement response.
type settled struct {
	Success     bool   `json:"success"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer"`
	ErrorReason string `json:"errorReason"`
}

// readSettled reads PAYMENT-RESPONSE (or version 1's X-PAYMENT-RESPONSE); ok is false when the
// seller sent none, or one that does not read.
func readSettled(h http.Header) (settled, bool) {
	v := h.Get("PAYMENT-RESPONSE")
	if v == "" {
		v = h.Get("X-PAYMENT-RESPONSE")
	}
	if v == "" || len(v) > maxOfferBytes {
		return settled{}, false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return settled{}, false
	}
	var s settled
	if json.Unmarshal(raw, &s) != nil {
		return settled{}, false
	}
	return s, true
}
