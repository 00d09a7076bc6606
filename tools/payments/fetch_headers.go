package payments

import (
	"strings"

	invopop "github.com/invopop/jsonschema"
	"github.com/switchboard-hq/switchboard/tools"
)

// Bounds on x402_fetch's request headers: how many, how long each value, which names.
const (
	MaxFetchHeaders     = 32
	MaxFetchHeaderValue = 4096
	maxFetchHeaderName  = 256
)

// FetchHeaders are the request headers x402_fetch sends: at most MaxFetchHeaders, each name an
// HTTP token, each value at most MaxFetchHeaderValue characters of visible text; names that
// belong to the connection, the host, cookies or x402 itself are refused (unsentHeaders).
type FetchHeaders map[string]string

// headerNamePattern is an HTTP field name (RFC 9110's token).
const headerNamePattern = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"

// JSONSchema bounds the headers in the tool's input schema, so a caller learns them up front.
func (FetchHeaders) JSONSchema() *invopop.Schema {
	maxN, maxV, maxName := uint64(MaxFetchHeaders), uint64(MaxFetchHeaderValue), uint64(maxFetchHeaderName)
	return &invopop.Schema{Type: "object", MaxProperties: &maxN,
		PropertyNames:        &invopop.Schema{Type: "string", Pattern: headerNamePattern, MaxLength: &maxName},
		AdditionalProperties: &invopop.Schema{Type: "string", MaxLength: &maxV}}
}

// unsentHeaders are the names x402_fetch never sends from the caller: the connection's own
// (hop-by-hop), what the client sets itself, the caller's credentials to another site, and the
// payment, which is Switchboard's to send.
var unsentHeaders = map[string]bool{
	"host": true, "content-length": true, "cookie": true, "authorization": true, "proxy-authorization": true,
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true, "expect": true,
	"payment-signature": true, "x-payment": true, "payment-required": true, "payment-response": true, "x-payment-response": true, "access-control-expose-headers": true,
}

// checkHeaders refuses headers x402_fetch does not send, saying which and why.
func checkHeaders(h FetchHeaders) error {
	if len(h) > MaxFetchHeaders {
		return tools.Errorf(tools.CodeBadInput, "headers: %d headers; at most %d are sent", len(h), MaxFetchHeaders)
	}
	for k, v := range h {
		if !isToken(k) || len(k) > maxFetchHeaderName {
			return tools.Errorf(tools.CodeBadInput, "headers: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", k)
		}
		if unsentHeaders[strings.ToLower(k)] {
			return tools.Errorf(tools.CodeBadInput, "headers: %s is not sent to x402 resources (the connection's, the client's or x402's own); remove it", k)
		}
		if len(v) > MaxFetchHeaderValue {
			return tools.Errorf(tools.CodeBadInput, "headers: %s is %d bytes; a value may be at most %d", k, len(v), MaxFetchHeaderValue)
		}
		for _, r := range v {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return tools.Errorf(tools.CodeBadInput, "headers: %s's value holds a control character; send visible text only", k)
			}
		}
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
