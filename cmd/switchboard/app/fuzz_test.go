package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app"
	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/store/storetest"
)

// fuzzRequests is how many requests the OpenAPI fuzz pass sends per database.
const fuzzRequests = 2500

// TestFuzzEveryOperation sends a seeded, bounded stream of hostile requests to every operation
// of /openapi.json, on every database: strings with NUL, invalid UTF-8, lone surrogates,
// duplicate keys, wrong types, huge values, broken JSON, hostile path and query parameters,
// with a key, a bad key and none. No answer may be a 5xx other than a 502 or 503 the
// operation documents, and every answer must be the error model or the documented success.
func TestFuzzEveryOperation(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Dialect: dialect, Config: func(c *app.Config) { c.DefaultRateLimit = 1_000_000 }})
			key := env.Onboard(t, "fuzz@example.com")["apiKey"].(string)
			ops := operations(t, env.URL)
			rng := rand.New(rand.NewPCG(20261123, uint64(len(dialect))))
			statuses := map[int]int{}
			var bad []string
			for i := range fuzzRequests {
				op := ops[i%len(ops)]
				req, desc := op.hostile(rng, env.URL, key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", desc, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				statuses[resp.StatusCode]++
				st := resp.StatusCode
				documented := op.responses[fmt.Sprint(st)]
				switch {
				case st >= 500 && !(documented && (st == 502 || st == 503)):
					bad = append(bad, fmt.Sprintf("%d for %s: %s", st, desc, body))
				case !documented:
					bad = append(bad, fmt.Sprintf("undocumented %d for %s: %s", st, desc, body))
				case st >= 400 && !json.Valid(body):
					bad = append(bad, fmt.Sprintf("%d with a body that is not the error model for %s: %q", st, desc, body))
				}
			}
			t.Logf("%d requests over %d operations: statuses %v", fuzzRequests, len(ops), statuses)
			if len(bad) > 0 {
				sort.Strings(bad)
				t.Fatalf("%d bad answers, e.g.:\n%s", len(bad), strings.Join(bad[:min(len(bad), 15)], "\n"))
			}
		})
	}
}

type operation struct {
	method, path string
	pathParams   []string
	query        map[string]string // name -> type
	body         map[string]string // top-level property -> type
	responses    map[string]bool
}

func operations(t *testing.T, base string) []operation {
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name, In string
				Schema   struct {
					Type any `json:"type"`
				} `json:"schema"`
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]struct {
							Type any `json:"type"`
						} `json:"properties"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for path, byMethod := range doc.Paths {
		for method, o := range byMethod {
			op := operation{method: strings.ToUpper(method), path: path, query: map[string]string{}, body: map[string]string{}, responses: map[string]bool{}}
			for _, p := range o.Parameters {
				if p.In == "path" {
					op.pathParams = append(op.pathParams, p.Name)
				} else {
					op.query[p.Name] = fmt.Sprint(p.Schema.Type)
				}
			}
			if o.RequestBody != nil {
				for name, p := range o.RequestBody.Content["application/json"].Schema.Properties {
					op.body[name] = fmt.Sprint(p.Type)
				}
			}
			for st := range o.Responses {
				op.responses[st] = true
			}
			ops = append(ops, op)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].method+ops[i].path < ops[j].method+ops[j].path })
	return ops
}

// hostileStrings are raw JSON string literals (so they can hold what a Go string cannot:
// lone surrogates) and the text a path or query parameter gets.
var hostileStrings = []struct{ json, text string }{
	{`""`, ""}, {`"a"`, "a"}, {`"\u0000"`, "\x00"}, {`"usdc\u0000on base"`, "usdc\x00on base"},
	{`"\ud800"`, "\xed\xa0\x80"}, {`"\udfff tail"`, "\xed\xbf\xbf tail"}, {"\"\xff\xfe\"", "\xff\xfe"},
	{`"` + strings.Repeat("x", 5000) + `"`, strings.Repeat("x", 5000)}, {`"@handle hi"`, "@handle hi"},
	{`"../../etc/passwd"`, "../../etc/passwd"}, {`"' OR 1=1 --"`, "' OR 1=1 --"}, {`"%00"`, "%00"},
	{`"😀\u202e"`, "😀\u202e"}, {`"0x7f000001"`, "0x7f000001"}, {`"https://127.0.0.1/"`, "https://127.0.0.1/"},
	{`"null"`, "null"}, {`"9223372036854775808"`, "9223372036854775808"}, {`"-1"`, "-1"}, {`"1e309"`, "1e309"},
}

var hostileValues = []string{
	`null`, `true`, `0`, `-1`, `1.5`, `1e309`, `9223372036854775807`, `123456789012345678901234567890`, `[]`, `[1,"a",null]`,
	`{}`, `{"a":{"b":{"c":[]}}}`, `"x"`, `{"\u0000":1}`, strings.Repeat("[", 200) + strings.Repeat("]", 200),
}

// hostile builds one request: mostly well-formed JSON with hostile values, sometimes broken
// bytes, with a valid key most of the time.
func (op operation) hostile(rng *rand.Rand, base, key string) (*http.Request, string) {
	path := op.path
	for _, p := range op.pathParams {
		path = strings.ReplaceAll(path, "{"+p+"}", url.PathEscape(hostileStrings[rng.IntN(len(hostileStrings))].text))
	}
	q := url.Values{}
	for name := range op.query {
		if rng.IntN(2) == 0 {
			q.Set(name, hostileStrings[rng.IntN(len(hostileStrings))].text)
		}
	}
	var body []byte
	if op.method == http.MethodPost || op.method == http.MethodPatch {
		body = hostileBody(rng, op.body)
	}
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, _ := http.NewRequest(op.method, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	switch rng.IntN(10) {
	case 0:
	case 1:
		req.Header.Set("x-api-key", "sb_test_"+strings.Repeat("z", rng.IntN(60)))
	default:
		req.Header.Set("x-api-key", key)
	}
	return req, fmt.Sprintf("%s %s body %.200q", op.method, u, body)
}

func hostileBody(rng *rand.Rand, props map[string]string) []byte {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	switch rng.IntN(12) {
	case 0:
		return []byte(`{"a":`) // truncated
	case 1:
		return []byte(hostileValues[rng.IntN(len(hostileValues))]) // not an object
	case 2:
		return []byte("\xff\xfe{}")
	}
	var b strings.Builder
	b.WriteString("{")
	n := 0
	for _, name := range names {
		if rng.IntN(3) == 0 {
			continue
		}
		if n > 0 {
			b.WriteString(",")
		}
		n++
		fmt.Fprintf(&b, "%q:", name)
		if rng.IntN(2) == 0 {
			b.WriteString(hostileStrings[rng.IntN(len(hostileStrings))].json)
		} else {
			b.WriteString(hostileValues[rng.IntN(len(hostileValues))])
		}
		if rng.IntN(8) == 0 { // the same key twice
			fmt.Fprintf(&b, ",%q:%s", name, hostileStrings[rng.IntN(len(hostileStrings))].json)
		}
	}
	b.WriteString("}")
	return []byte(b.String())
}
