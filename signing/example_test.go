package signing_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/switchboard-hq/switchboard/signing"
)

// Keys sort by UTF-16 code units: "😀" (a surrogate pair, 0xD83D...) before "ｚ" (U+FF5A).
func ExampleCanonicalize() {
	out, err := signing.Canonicalize([]byte(`{"b": [1.0, 1E3, 1e21], "a": "<\u00e9>", "ｚ": 1, "😀": 2}`))
	fmt.Println(string(out), err)
	_, err = signing.Canonicalize([]byte(`{"wei": 12345678901234567890}`))
	fmt.Println(err != nil)
	// Output:
	// {"a":"<é>","b":[1,1000,1e+21],"😀":2,"ｚ":1} <nil>
	// true
}

func ExampleMiddleware() {
	v := signing.NewVerifierFromURL("https://switchboard.example")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := signing.EnvelopeFromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"success": true, "result": map[string]any{"requestId": env.RequestID}})
	})
	http.Handle("/tool", signing.Middleware(v, signing.DedupeMiddleware(signing.NewResponseDedupe(), handler)))
}

func ExampleNewRESTRoundTripper() {
	var signer *signing.Signer // signing.NewSigner(privateKey)
	call := signing.CallFields{
		RequestID:          signing.NewRequestID(), // reuse it for every retry
		IntentDefinitionID: "int_123",
		UserID:             signing.Pseudonym([]byte("32 random bytes of the service.."), "account", "partner"),
		Args:               json.RawMessage(`{"query":"price of ETH"}`),
	}
	client := &http.Client{Transport: signing.NewRESTRoundTripper(signer, call, nil)}
	_ = client // client.Post(toolEndpoint, "application/json", nil): the transport writes the signed body
}
