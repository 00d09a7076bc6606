package mcpserver

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/tools"
)

// CheckMessage refuses a JSON-RPC message (or batch) that JSON readers would see differently,
// before the go-sdk reads it. The go-sdk keeps the last of two equal keys and turns invalid
// UTF-8 and unpaired surrogate escapes into U+FFFD, so a filter or log that reads the first
// params.name, or the bytes, could see another call than the one that runs. Refused, at any
// depth (batch elements and arguments included):
//   - nesting deeper than jsonlimit.MaxDepth levels, more than jsonlimit.MaxItems items (first:
//     nothing keeps state per level before it);
//   - text that is not exactly one JSON value (trailing data, which the go-sdk ignores);
//   - invalid UTF-8 anywhere, and \u escapes of unpaired UTF-16 surrogates;
//   - a key twice in one object.
//
// A NUL inside a string is unambiguous and left to the kernel, which names the field.
func CheckMessage(raw []byte) *tools.Error {
	if e := tools.CheckLimits("the JSON-RPC message", raw); e != nil {
		return e // before any reader keeps state per level
	}
	if !utf8.Valid(raw) {
		at := invalidUTF8At(raw)
		return tools.Errorf(tools.CodeBadInput, "the JSON-RPC message is not valid UTF-8 (byte 0x%02x at offset %d); send UTF-8 text", raw[at], at).
			WithDetails(map[string]any{"offset": at})
	}
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return tools.Errorf(tools.CodeBadInput, "the JSON-RPC message is not one JSON value (%v); send one JSON-RPC message, or a batch array, per request", err)
	}
	return tools.CheckJSONUnambiguous("JSON-RPC message", raw)
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

// ParseErrorCode is JSON-RPC 2.0's "Parse error".
const ParseErrorCode = -32700

// ParseError is the JSON-RPC 2.0 answer to a message CheckMessage refused: code -32700 and a
// null id (the id of an ambiguous message cannot be trusted), the reason in the message and
// the error model's object in data.
func ParseError(e *tools.Error) []byte {
	type rpcError struct {
		Code    int          `json:"code"`
		Message string       `json:"message"`
		Data    *tools.Error `json:"data"`
	}
	raw, _ := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      any      `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{ParseErrorCode, "Parse error: " + e.Message, e}})
	return raw
}
