package mcpserver

import (
	"encoding/json"
	"mime"
	"net/http"

	"github.com/switchboard-hq/switchboard/tools"
)

// jsonBodiesOnly answers a POST whose Content-Type is not application/json with 415 in the
// error model, saying what to send, before the go-sdk answers it in plain text ("Content-Type
// must be 'application/json'"). The test mirrors the go-sdk's: the media type, parameters
// (charset) aside.
func jsonBodiesOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				got := "no Content-Type"
				if ct := r.Header.Get("Content-Type"); ct != "" {
					got = "Content-Type " + tools.Clip(ct, 80, "…")
				}
				e := tools.Errorf(tools.CodeBadInput, "POST /mcp takes a JSON-RPC message with Content-Type: application/json (and Accept: application/json, text/event-stream); this request has %s", got)
				body, _ := json.Marshal(tools.Body{Error: e})
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnsupportedMediaType)
				w.Write(body)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
