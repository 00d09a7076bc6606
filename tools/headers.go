package tools

import (
	"net/http"
	"strings"
)

// Headers the HTTP front sets on every request after deleting any value a client sent, so
// the MCP door (which sees only headers) can trust them.
const (
	HeaderClientAddr = "X-Switchboard-Client-Addr"
	HeaderRequestID  = "X-Request-Id"
)

// KeyFromHeader reads the credential (an API key or an OAuth access token) from every
// x-api-key header and every Authorization: Bearer header; "" when there is none. Two
// different credentials in one request are refused, never resolved by picking one: a proxy
// or filter that read the other would see another caller than the one acting (RFC 6750 §2
// allows one method per request; its invalid_request is a 400). Repeats of the same
// credential pass. Authorization headers of other schemes are not credentials here.
func KeyFromHeader(h http.Header) (string, *Error) {
	var key string
	add := func(k string) *Error {
		k = strings.TrimSpace(k)
		switch {
		case k == "" || k == key:
		case key == "":
			key = k
		default:
			return Errorf(CodeBadInput, "two different credentials in one request: send exactly one API key or access token, in x-api-key or in Authorization: Bearer")
		}
		return nil
	}
	for _, v := range h.Values("X-Api-Key") {
		if e := add(v); e != nil {
			return "", e
		}
	}
	for _, auth := range h.Values("Authorization") {
		if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			if e := add(auth[7:]); e != nil {
				return "", e
			}
		}
	}
	return key, nil
}
