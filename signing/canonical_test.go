package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestCanonicalizeTable(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{` [ 1 , { "b" : [ ] , "a" : { } } ] `, `[1,{"a":{},"b":[]}]`},
		{`"\u00e9\/"`, `"é/"`},
		{`"\"\\\b\f\n\r\t"`, `"\"\\\b\f\n\r\t"`},
		{`"\u0000\u001f\u007f"`, "\"\\u0000\\u001f\x7f\""},
		{`"\u000B"`, `"\u000b"`},
		{`"<>&\u2028\u2029"`, "\"<>&\u2028\u2029\""},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`-0`, `0`},
		{`-0.0e10`, `0`},
		{`0e-5`, `0`},
		{`1.0`, `1`},
		{`1E3`, `1000`},
		{`1e+3`, `1000`},
		{`10e-1`, `1`},
		{`0.1`, `0.1`},
		{`1e21`, `1e+21`},
		{`1e20`, `100000000000000000000`},
		{`123e18`, `123000000000000000000`},
		{`1234e18`, `1.234e+21`},
		{`1e-7`, `1e-7`},
		{`1.5e-7`, `1.5e-7`},
		{`0.000001`, `0.000001`},
		{`0.0000012345`, `0.0000012345`},
		{`-1e-7`, `-1e-7`},
		{`1.7976931348623157e308`, `1.7976931348623157e+308`},
		{`5e-324`, `5e-324`},
		{`9007199254740992`, `9007199254740992`},
		{`-9007199254740992`, `-9007199254740992`},
		{`9007199254740994`, `9007199254740994`},
		{`18014398509481984`, `18014398509481984`},
		{`100000000000000000000000`, `1e+23`},
		{`0.30000000000000004`, `0.30000000000000004`},
		{`123456789012345`, `123456789012345`},
		{`1234567890123456`, `1234567890123456`},
		{`{"\ue000":1,"\ud83d\ude00":2}`, `{"😀":2,"` + "\ue000" + `":1}`},
		{`{"10":1,"9":2,"1":3}`, `{"1":3,"10":1,"9":2}`},
		{`{"a":1,"\u0061b":2}`, `{"a":1,"ab":2}`},
		{"\t\n\r {}", `{}`},
		{`[null,true,false]`, `[null,true,false]`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Canonicalize(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct{ name, in, wantMsg string }{
		{"empty", ``, "unexpected end"},
		{"trailing data", `{} {}`, "after the top-level value"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"trailing comma object", `{"a":1,}`, "string key"},
		{"leading zero", `01`, "after the top-level value"},
		{"plus sign", `+1`, "unexpected character"},
		{"bare dot", `1.`, "digit expected"},
		{"bare exponent", `1e`, "digit expected"},
		{"NaN", `NaN`, "unexpected character"},
		{"Infinity", `Infinity`, "unexpected character"},
		{"single quotes", `{'a':1}`, "string key"},
		{"BOM", "\ufeff{}", "unexpected character"},
		{"raw control char", "\"a\nb\"", "control character"},
		{"bad escape", `"\x41"`, "invalid escape"},
		{"short unicode escape", `"\u12"`, `invalid \u escape`},
		{"lone high surrogate", `"\ud800"`, "unpaired UTF-16 surrogate"},
		{"lone high surrogate then char", `"\ud800x"`, "unpaired UTF-16 surrogate"},
		{"high surrogate then high", `"\ud800\ud800"`, "unpaired UTF-16 surrogate"},
		{"lone low surrogate", `"\udc00"`, "unpaired UTF-16 surrogate"},
		{"invalid UTF-8", "\"\xff\"", "invalid UTF-8"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8"},
		{"overlong UTF-8", "\"\xc0\xaf\"", "invalid UTF-8"},
		{"duplicate key", `{"a":1,"a":2}`, "duplicate object key"},
		{"duplicate key via escape", `{"a":1,"\u0061":2}`, "duplicate object key"},
		{"nested duplicate key", `[{"x":{"b":1,"b":1}}]`, "duplicate object key"},
		{"beyond 2^53", `9007199254740993`, "cannot be represented exactly"},
		{"big integer amount", `{"amount":12345678901234567890}`, "send it as a string"},
		{"too many digits", `0.1000000000000000055511151231257827`, "cannot be represented exactly"},
		{"overflow", `1e400`, "outside the range"},
		{"underflow", `1e-400`, "outside the range"},
		{"subnormal rounding", `4.9e-324`, "cannot be represented exactly"},
		{"huge exponent", `1e99999999999999999999`, "outside the range"},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "nesting deeper"},
		{"unterminated string", `"abc`, "unterminated string"},
		{"unterminated object", `{"a":1`, "expected ',' or '}'"},
		{"literal typo", `nul`, "invalid literal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err == nil {
				t.Fatalf("accepted, got %s", got)
			}
			if !errors.Is(err, ErrNotCanonicalizable) {
				t.Errorf("error %v does not wrap ErrNotCanonicalizable", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
	// The deepest accepted nesting.
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Canonicalize([]byte(deep)); err != nil {
		t.Errorf("depth %d rejected: %v", MaxDepth, err)
	}
}

func TestCompareUTF16(t *testing.T) {
	keys := []string{"", "a", "ab", "b", "Z", "é", "\u00ff", "\u0100", "\u7fff", "\ud7ff", "\ue000", "\uffff",
		"\U00010000", "\U0001F600", "\U0010FFFF", "a\U0001F600", "a\ue000", "10", "9", "\x00", "\x7f"}
	for _, a := range keys {
		for _, b := range keys {
			want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
			got := compareUTF16([]byte(a), []byte(b))
			if sign(got) != want {
				t.Errorf("compareUTF16(%q, %q) = %d, want sign %d", a, b, got, want)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func TestCanonicalizeValue(t *testing.T) {
	got, err := CanonicalizeValue(map[string]any{
		"b": []any{1.0, 1e21, 0.1, "<&>"}, "a": struct {
			X int    `json:"x"`
			Y string `json:"y,omitempty"`
		}{X: 3},
		"n": json.Number("1E3"), "r": json.RawMessage(`{"z":1,"y":2}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"x":3},"b":[1,1e+21,0.1,"<&>"],"n":1000,"r":{"y":2,"z":1}}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if _, err := CanonicalizeValue(math.NaN()); !errors.Is(err, ErrNotCanonicalizable) {
		t.Errorf("NaN: %v", err)
	}
}

// TestNumbersAgainstES checks the number formatter against Go's own rendering of the
// ECMAScript algorithm for many random doubles, written in several spellings.
func TestNumbersAgainstES(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var f float64
		switch r.IntN(4) {
		case 0:
			f = math.Float64frombits(r.Uint64())
		case 1:
			f = float64(r.Int64N(1<<53)) * math.Pow10(r.IntN(40)-20)
		case 2:
			f = r.Float64() * math.Pow10(r.IntN(60)-30)
		default:
			f = float64(r.IntN(2000000)-1000000) * math.Pow10(r.IntN(3))
			if r.IntN(4) == 0 {
				f = float64(r.IntN(19)-9) * math.Pow10(r.IntN(50)-25)
			}
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		want := esFormat(f)
		for i, lit := range []string{
			strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(f, 'e', -1, 64),
			withTrailingZeros(f),
			strconv.FormatFloat(f, 'E', 20, 64), // 21 significant digits
			want,
		} {
			got, err := Canonicalize([]byte(lit))
			if i == 3 && err != nil {
				// 21 digits usually say more than the shortest form: rejected as documented.
				if !strings.Contains(err.Error(), "cannot be represented exactly") {
					t.Fatalf("%s: %v", lit, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s (%v): %v", lit, f, err)
			}
			if string(got) != want {
				t.Fatalf("%s: got %s want %s", lit, got, want)
			}
		}
	}
}

// withTrailingZeros spells f as 1.2000E+05.
func withTrailingZeros(f float64) string {
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	return mant + "000E" + exp
}

// esFormat is an independent rendering of ECMAScript Number::toString for a finite double,
// following the steps of ECMA-262 literally.
func esFormat(f float64) string {
	if f == 0 {
		return "0"
	}
	if f < 0 {
		return "-" + esFormat(-f)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	s := strings.Replace(mant, ".", "", 1)
	k := len(s)
	x, _ := strconv.Atoi(exp)
	n := x + 1
	switch {
	case k <= n && n <= 21:
		return s + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return s[:n] + "." + s[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + s
	}
	sgn := "+"
	if n-1 < 0 {
		sgn = "-"
	}
	if k == 1 {
		return s + "e" + sgn + strconv.Itoa(abs(n-1))
	}
	return s[:1] + "." + s[1:] + "e" + sgn + strconv.Itoa(abs(n-1))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestCanonicalMatchesNode compares Canonicalize with the JavaScript reference (JSON.parse,
// sorted keys, JSON.stringify) on random documents. It needs node in PATH.
func TestCanonicalMatchesNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed; CI must run the cross-language check (scripts/test installs nodejs)")
		}
		t.Skip("node not installed")
	}
	if testing.Short() {
		t.Skip("short")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var docs []string
	for range 3000 {
		docs = append(docs, randomJSON(r, 0))
	}
	var want []string
	for _, d := range docs {
		c, err := Canonicalize([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		want = append(want, string(c))
	}
	dir := t.TempDir()
	in, _ := json.Marshal(docs)
	if err := os.WriteFile(filepath.Join(dir, "in.json"), in, 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "testdata", "signing", "verify-vectors.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	prog := fmt.Sprintf(`
import { readFileSync } from 'node:fs';
const src = readFileSync(%q, 'utf8');
const m = src.match(/export function canonicalize[\s\S]*?\n}\n/)[0].replace('export ', '');
const canonicalize = new Function(m + '; return canonicalize;')();
const docs = JSON.parse(readFileSync(%q, 'utf8'));
process.stdout.write(JSON.stringify(docs.map((d) => canonicalize(JSON.parse(d)))));
`, script, filepath.Join(dir, "in.json"))
	if err := os.WriteFile(filepath.Join(dir, "run.mjs"), []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join(dir, "run.mjs")).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("node returned %d results for %d documents", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("document %s\n  go: %s\nnode: %s", docs[i], want[i], got[i])
		}
	}
}

var keyAlphabet = []string{"a", "b", "Z", "1", "10", "2", "-", "é", "ß", "\u2028", "<", "&", "\"", "\\", "\x01", "\n",
	"\ue000", "\uffff", "\U0001F600", "\U00010000", "日", " "}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(keyAlphabet[r.IntN(len(keyAlphabet))])
	}
	return b.String()
}

// randomJSON writes a random document in non-canonical form: random spacing, escaped and
// raw characters, and numbers spelled in several ways.
func randomJSON(r *rand.Rand, depth int) string {
	ws := func() string { return []string{"", " ", "\n", "\t "}[r.IntN(4)] }
	quote := func(s string) string {
		if r.IntN(2) == 0 {
			b, _ := json.Marshal(s) // Go escaping: \u003c, \u2028, ...
			return string(b)
		}
		var sb strings.Builder
		sb.WriteByte('"')
		for _, c := range s {
			switch {
			case c == '"' || c == '\\':
				sb.WriteString(`\` + string(c))
			case c < 0x20 || r.IntN(8) == 0:
				for _, u := range utf16.Encode([]rune{c}) {
					fmt.Fprintf(&sb, `\u%04X`, u)
				}
			default:
				sb.WriteRune(c)
			}
		}
		sb.WriteByte('"')
		return sb.String()
	}
	k := r.IntN(8)
	if depth > 3 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2:
		return quote(randomString(r))
	case 3, 4:
		var f float64
		switch r.IntN(3) {
		case 0:
			f = float64(r.IntN(1000) - 500)
		case 1:
			f = (r.Float64() - 0.5) * math.Pow10(r.IntN(50)-25)
		default:
			f = math.Float64frombits(r.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				f = 1
			}
		}
		return []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'E', -1, 64), strconv.FormatFloat(f, 'f', -1, 64)}[r.IntN(3)]
	case 5:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, ws()+randomJSON(r, depth+1)+ws())
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		seen := map[string]bool{}
		var parts []string
		for range r.IntN(5) {
			key := randomString(r)
			if seen[key] {
				continue
			}
			seen[key] = true
			parts = append(parts, ws()+quote(key)+ws()+":"+ws()+randomJSON(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

func TestAppendCanonical(t *testing.T) {
	got, err := AppendCanonical([]byte("x="), []byte(`{"b":1,"a":[]}`))
	if err != nil || string(got) != `x={"a":[],"b":1}` {
		t.Errorf("got %s, %v", got, err)
	}
	if got, err := AppendCanonical([]byte("x="), []byte(`{`)); err == nil || !bytes.Equal(got, []byte("x=")) {
		t.Errorf("got %s, %v", got, err)
	}
}

// TestShortDecimals checks the no-float fast path: every decimal of up to 15 significant
// digits in the normal range is accepted and printed as ECMAScript prints its double; longer
// or subnormal ones are either printed the same way or rejected as not round-tripping.
func TestShortDecimals(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 50000 {
		nd := 1 + r.IntN(18)
		var digits strings.Builder
		digits.WriteByte(byte('1' + r.IntN(9)))
		for range nd - 1 {
			digits.WriteByte(byte('0' + r.IntN(10)))
		}
		e := r.IntN(640) - 330
		lit := digits.String()[:1] + "." + digits.String()[1:] + "0e" + strconv.Itoa(e)
		if r.IntN(2) == 0 {
			lit = "-" + lit
		}
		f, perr := strconv.ParseFloat(lit, 64)
		got, err := Canonicalize([]byte(lit))
		normal := e >= -307 && e <= 307
		short := len(strings.TrimRight(digits.String(), "0")) <= 15
		if err != nil {
			if short && normal {
				t.Fatalf("%s rejected: %v", lit, err)
			}
			continue
		}
		if perr != nil || f == 0 {
			t.Fatalf("%s accepted as %s although it is out of range", lit, got)
		}
		if want := esFormat(f); string(got) != want {
			t.Fatalf("%s: got %s, want %s", lit, got, want)
		}
	}
}
