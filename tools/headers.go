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

// KeyFromHeader reads the API key from x-api-key or Authorization: Bearer.
func KeyFromHeader(h http.Header) string {
	if k := strings.TrimSpace(h.Get("X-Api-Key")); k != "" {
		return k
	}
	if auth := h.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}
