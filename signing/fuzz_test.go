package signing

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// FuzzCanonicalize: never panics; accepts only valid JSON; output is valid JSON, a fixed
// point, and equal to an independent reference built on encoding/json (UseNumber);
// rejections of valid JSON are only the documented ones.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x"]}`, `{"\ue000":1,"\ud83d\ude00":2}`, `[1e21,1E-7,-0,0.1,1.0]`,
		`"\u2028<>&\"\\\/\b\f\n\r\t\u0001"`, `{"a":{"a":{"a":[]}}}`, `12345678901234567890`, `{"a":1,"a":2}`,
		`"\ud800"`, "\"\xff\"", `{"10":1,"9":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			if json.Valid(data) {
				msg := err.Error()
				documented := false
				for _, why := range []string{"duplicate object key", "unpaired UTF-16 surrogate", "invalid UTF-8", "IEEE-754 double", "nesting deeper"} {
					documented = documented || strings.Contains(msg, why)
				}
				if !documented {
					t.Fatalf("valid JSON %q rejected: %v", data, err)
				}
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted as %q", data, out)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not valid JSON", out)
		}
		again, err := Canonicalize(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("encoding/json cannot decode accepted input %q: %v", data, err)
		}
		if ref := referenceCanonical(t, v); ref != string(out) {
			t.Fatalf("input %q\n  got %q\n  ref %q", data, out, ref)
		}
	})
}

// referenceCanonical is a deliberately simple, independent canonicalizer over values
// decoded by encoding/json with UseNumber.
func referenceCanonical(t *testing.T, v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			t.Fatalf("number %s: %v", v, err)
		}
		return esFormat(f)
	case string:
		return referenceQuote(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = referenceCanonical(t, e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = referenceQuote(k) + ":" + referenceCanonical(t, v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	t.Fatalf("unexpected %T", v)
	return ""
}

func referenceQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xF])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzVerify: never panics, and whatever the mutation of a signed REST body, or of the
// signature, timestamp and arguments of a signed MCP call, an accepted request carries
// exactly the signed content.
func FuzzVerify(f *testing.F) {
	seed := sha256.Sum256([]byte("fuzz verify test key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	now := time.UnixMilli(1767225600000)
	signer := NewSigner(priv)
	signer.Now = func() time.Time { return now }
	env := &Envelope{RequestID: "9d4e2f5a-1b3c-4d5e-8f6a-7b8c9d0e1f2a", IntentDefinitionID: "int_f", UserID: "u_f",
		Args: json.RawMessage(`{"query":"x","n":[1,2.5,{"k":null}],"\ue000":true}`)}
	if err := signer.Sign(env); err != nil {
		f.Fatal(err)
	}
	body, err := MarshalEnvelope(env)
	if err != nil {
		f.Fatal(err)
	}
	payload, _ := CanonicalPayload(env)
	v := NewVerifierFromKey(priv.Public().(ed25519.PublicKey), WithClock(func() time.Time { return now }))
	ts := strconv.FormatInt(env.Timestamp, 10)

	f.Add(body, env.ServiceSignature, ts, []byte(env.Args))
	f.Add(bytes.Replace(body, []byte(`"x"`), []byte(`"y"`), 1), env.ServiceSignature, ts+"1", []byte(`{"query":"y"}`))
	f.Add(bytes.Replace(body, []byte(`2.5`), []byte(`2.50`), 1), env.ServiceSignature[:87]+"B", "+"+ts, []byte(` {"query":"x","n":[1,2.5,{"k":null}],"\ue000":true} `))

	f.Fuzz(func(t *testing.T, b []byte, sig, tsHeader string, args []byte) {
		ctx := context.Background()
		if got, err := v.Verify(ctx, b, http.Header{}); err == nil {
			if got.ServiceSignature != env.ServiceSignature {
				t.Fatalf("accepted a different signature %q", got.ServiceSignature)
			}
			p, err := CanonicalPayload(got)
			if err != nil || !bytes.Equal(p, payload) {
				t.Fatalf("accepted mutated envelope %q", b)
			}
			// Nothing besides the signed fields may ride along.
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			delete(m, "serviceSignature")
			if c, err := CanonicalizeValue(m); err != nil || !bytes.Equal(c, payload) {
				t.Fatalf("accepted body with unsigned content %q", b)
			}
		}
		h := http.Header{}
		SetHeaders(h, env, BindingMCPHTTP)
		h.Set(HeaderSignature, sig)
		h.Set(HeaderTimestamp, tsHeader)
		if got, err := v.VerifyHeaders(ctx, h, args); err == nil {
			if sig != env.ServiceSignature || got.Timestamp != env.Timestamp || !bytes.Equal(got.Args, env.Args) {
				t.Fatalf("accepted mutated call: sig %q ts %q args %q", sig, tsHeader, args)
			}
		}
	})
}
