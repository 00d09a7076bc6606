package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/mcpserver"
	"github.com/switchboard-hq/switchboard/tools"
)

func TestCheckMessage(t *testing.T) {
	bad := map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`:          `JSON-RPC message: /params has the key "name" twice`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`:                                          `/ has the key "id" twice`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"method":"a","method":"b"}]`:                   `/1 has the key "method" twice`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xff\"}}": "not valid UTF-8 (byte 0xff at offset 65)",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\udc00"}}`:               `/params/name has an unpaired UTF-16 surrogate escape (\udc00)`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"x"}`:            "not one JSON value",
		`{"jsonrpc":"2.0","id":1,"method":"ping",}`:                                                "not one JSON value",
		"  ": "not one JSON value",
	}
	for in, want := range bad {
		e := mcpserver.CheckMessage([]byte(in))
		if e == nil || e.Code != tools.CodeBadInput || !strings.Contains(e.Message, want) {
			t.Errorf("%q: %v, want BAD_INPUT saying %q", in, e, want)
		}
	}
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"name":"b","s":"\u0000 \ud83d\ude00 é"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		" {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n",
	} {
		if e := mcpserver.CheckMessage([]byte(in)); e != nil {
			t.Errorf("%q: refused: %v", in, e)
		}
	}

	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int          `json:"code"`
			Message string       `json:"message"`
			Data    *tools.Error `json:"data"`
		} `json:"error"`
	}
	raw := mcpserver.ParseError(mcpserver.CheckMessage([]byte(`{"id":1,"id":2}`)))
	if err := json.Unmarshal(raw, &resp); err != nil || resp.JSONRPC != "2.0" || string(resp.ID) != "null" || resp.Error.Code != -32700 ||
		resp.Error.Message != `Parse error: JSON-RPC message: / has the key "id" twice; send each key once` || resp.Error.Data == nil || resp.Error.Data.Code != tools.CodeBadInput {
		t.Errorf("ParseError: %s", raw)
	}
}

// BenchmarkCheckMessage measures the envelope check on a typical tools/call (about 1 KB).
func BenchmarkCheckMessage(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"invoke_partner_message","arguments":{"message":"@weather forecast for Lisbon this weekend, in celsius please","args":{"city":"Lisbon","days":3,"units":"metric","tags":["a","b","c"],"nested":{"x":1.5,"y":[1,2,3],"z":"` + strings.Repeat("é", 300) + `"}}},"_meta":{"progressToken":7}}}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if e := mcpserver.CheckMessage(msg); e != nil {
			b.Fatal(e)
		}
	}
}
