package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Canonicalize accepts.
const MaxDepth = 1000

// ErrNotCanonicalizable is wrapped by every error Canonicalize returns for input that is
// valid-looking JSON but cannot be signed reproducibly (see Canonicalize).
var ErrNotCanonicalizable = errors.New("signing: JSON cannot be canonicalized")

// Canonicalize returns the canonical form of the JSON text raw: the bytes a JavaScript
// partner obtains from JSON.parse followed by JSON.stringify with object keys sorted
// recursively. This is RFC 8785 (JSON Canonicalization Scheme):
//
//   - object keys sorted at every level by their UTF-16 code units (JavaScript's default
//     Array.prototype.sort order, which differs from UTF-8 byte order for characters above
//     U+FFFF versus U+E000..U+FFFF); arrays keep their order; null is kept;
//   - no whitespace;
//   - strings escaped as JSON.stringify does: only '"', '\\' and control characters below
//     U+0020 are escaped (\b \t \n \f \r, otherwise \u00xx in lower-case hex); '<', '>',
//     '&', U+2028 and U+2029 are written as themselves, as is every other character (UTF-8);
//   - numbers formatted as ECMAScript Number.prototype.toString does (1.0 -> 1, 1E3 -> 1000,
//     -0 -> 0, 1e21 -> 1e+21, 1e-7 -> 1e-7, 0.000001 -> 0.000001).
//
// The input is parsed by a strict RFC 8259 parser that keeps every number as its literal
// text (like json.Decoder.UseNumber: no number passes through float64 on the way in).
// Canonicalize rejects, with an error wrapping ErrNotCanonicalizable:
//
//   - invalid JSON, including trailing data and a byte-order mark;
//   - invalid UTF-8 and unpaired UTF-16 surrogate escapes such as "\ud800" (JavaScript
//     would keep them, Go would silently replace them with U+FFFD: no stable form exists);
//   - duplicate object keys (JSON.parse keeps the last one, other parsers the first: a
//     signed message must not mean different things to different readers);
//   - nesting deeper than MaxDepth;
//   - numbers whose value does not survive a round trip through an IEEE-754 double, which
//     is what every JavaScript partner parses them into. 12345678901234567890 (beyond 2^53),
//     0.1000000000000000055 (more digits than a double holds), 1e400 (overflow) and 1e-400
//     (underflow) are rejected rather than rounded, so a signature never covers a value
//     that a Go partner and a JavaScript partner would read differently. Send such values,
//     and every monetary amount, as decimal strings ("12345678901234567890").
//
// Numbers that do survive are accepted in any spelling: 1E3, 1000.0 and 1e+3 all become
// 1000.
func Canonicalize(raw []byte) ([]byte, error) {
	p := getParser(raw)
	defer putParser(p)
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(raw)+8)
	return p.write(out, root)
}

// AppendCanonical appends the canonical form of raw to dst (see Canonicalize).
func AppendCanonical(dst, raw []byte) ([]byte, error) {
	p := getParser(raw)
	defer putParser(p)
	root, err := p.parse()
	if err != nil {
		return dst, err
	}
	return p.write(dst, root)
}

// CanonicalizeValue marshals v with encoding/json and canonicalizes the result. Go values
// go through encoding/json's rules: struct tags apply, invalid UTF-8 in Go strings becomes
// U+FFFD, and float64 values are written in their shortest form, so every finite float64
// is accepted. NaN and infinities are rejected by encoding/json.
func CanonicalizeValue(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotCanonicalizable, err)
	}
	return Canonicalize(raw)
}

type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one value of the parsed tree. Nodes live in parser.nodes and refer to each other
// by index, so parsing allocates nothing per value.
type node struct {
	kind       kind
	esc        bool  // string value contains escape sequences
	keyInBuf   bool  // key is decoded into parser.keys rather than a span of the input
	start, end int32 // string content (without quotes) or number literal
	keyStart   int32 // member key span (input or parser.keys)
	keyEnd     int32
	first      int32 // first child, -1 when none
	next       int32 // next sibling, -1 when none
	count      int32 // number of children
}

type parser struct {
	data  []byte
	pos   int
	nodes []node
	keys  []byte  // decoded keys that contained escapes
	idx   []int32 // scratch for sorting members
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

func getParser(data []byte) *parser {
	p := parserPool.Get().(*parser)
	p.data = data
	p.pos = 0
	p.nodes = p.nodes[:0]
	p.keys = p.keys[:0]
	p.idx = p.idx[:0]
	return p
}

func putParser(p *parser) {
	p.data = nil
	// Do not let one huge document pin its buffers in the pool.
	if cap(p.nodes) > 1<<14 || cap(p.keys) > 1<<16 || cap(p.idx) > 1<<14 {
		return
	}
	parserPool.Put(p)
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotCanonicalizable}, args...)...)
}

func (p *parser) syntaxError(what string) error {
	if p.pos >= len(p.data) {
		return p.errorf("invalid JSON: unexpected end of input, %s", what)
	}
	return p.errorf("invalid JSON at offset %d: %s", p.pos, what)
}

func (p *parser) parse() (int32, error) {
	if len(p.data) >= math.MaxInt32 {
		return 0, p.errorf("input too large")
	}
	root, err := p.value(0)
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return 0, p.syntaxError("unexpected data after the top-level value")
	}
	return root, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) add(n node) int32 {
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

func (p *parser) value(depth int) (int32, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return 0, p.syntaxError("expected a value")
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object(depth + 1)
	case '[':
		return p.array(depth + 1)
	case '"':
		start := p.pos + 1
		esc, err := p.scanString()
		if err != nil {
			return 0, err
		}
		return p.add(node{kind: kindString, esc: esc, start: int32(start), end: int32(p.pos - 1), first: -1, next: -1}), nil
	case 't':
		return p.literal("true", kindTrue)
	case 'f':
		return p.literal("false", kindFalse)
	case 'n':
		return p.literal("null", kindNull)
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			start := p.pos
			if err := p.scanNumber(); err != nil {
				return 0, err
			}
			return p.add(node{kind: kindNumber, start: int32(start), end: int32(p.pos), first: -1, next: -1}), nil
		}
		return 0, p.syntaxError(fmt.Sprintf("unexpected character %q", c))
	}
}

func (p *parser) literal(word string, k kind) (int32, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return 0, p.syntaxError("invalid literal")
	}
	p.pos += len(word)
	return p.add(node{kind: k, first: -1, next: -1}), nil
}

func (p *parser) object(depth int) (int32, error) {
	if depth > MaxDepth {
		return 0, p.errorf("nesting deeper than %d", MaxDepth)
	}
	self := p.add(node{kind: kindObject, first: -1, next: -1})
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return self, nil
	}
	prev := int32(-1)
	var count int32
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return 0, p.syntaxError("expected a string key")
		}
		kstart := p.pos + 1
		kesc, err := p.scanString()
		if err != nil {
			return 0, err
		}
		kend := p.pos - 1
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return 0, p.syntaxError("expected ':' after an object key")
		}
		p.pos++
		child, err := p.value(depth)
		if err != nil {
			return 0, err
		}
		n := &p.nodes[child]
		if kesc {
			off := len(p.keys)
			p.keys = appendUnescaped(p.keys, p.data[kstart:kend])
			n.keyInBuf = true
			n.keyStart, n.keyEnd = int32(off), int32(len(p.keys))
		} else {
			n.keyStart, n.keyEnd = int32(kstart), int32(kend)
		}
		if prev < 0 {
			p.nodes[self].first = child
		} else {
			p.nodes[prev].next = child
		}
		prev = child
		count++
		p.skipSpace()
		if p.pos >= len(p.data) {
			return 0, p.syntaxError("expected ',' or '}'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.nodes[self].count = count
			return self, nil
		default:
			return 0, p.syntaxError("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (int32, error) {
	if depth > MaxDepth {
		return 0, p.errorf("nesting deeper than %d", MaxDepth)
	}
	self := p.add(node{kind: kindArray, first: -1, next: -1})
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return self, nil
	}
	prev := int32(-1)
	var count int32
	for {
		child, err := p.value(depth)
		if err != nil {
			return 0, err
		}
		if prev < 0 {
			p.nodes[self].first = child
		} else {
			p.nodes[prev].next = child
		}
		prev = child
		count++
		p.skipSpace()
		if p.pos >= len(p.data) {
			return 0, p.syntaxError("expected ',' or ']'")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.nodes[self].count = count
			return self, nil
		default:
			return 0, p.syntaxError("expected ',' or ']'")
		}
	}
}

// scanString advances past a string whose opening quote is at p.pos, validating escapes,
// surrogate pairs and UTF-8. It reports whether the string contains escape sequences.
func (p *parser) scanString() (esc bool, err error) {
	d := p.data
	i := p.pos + 1
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				p.pos = i
				return false, p.syntaxError("unterminated escape")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					p.pos = i
					return false, p.syntaxError(`invalid \u escape`)
				}
				i += 6
				switch {
				case r >= 0xD800 && r < 0xDC00:
					r2, ok := rune(0), false
					if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						r2, ok = hex4(d, i+2)
					}
					if !ok || r2 < 0xDC00 || r2 >= 0xE000 {
						p.pos = i - 6
						return false, p.errorf("unpaired UTF-16 surrogate escape at offset %d", p.pos)
					}
					i += 6
				case r >= 0xDC00 && r < 0xE000:
					p.pos = i - 6
					return false, p.errorf("unpaired UTF-16 surrogate escape at offset %d", p.pos)
				}
			default:
				p.pos = i
				return false, p.syntaxError("invalid escape")
			}
		case c < 0x20:
			p.pos = i
			return false, p.syntaxError("control character in string")
		case c < utf8.RuneSelf:
			i++
			for i < len(d) && plainASCII[d[i]] {
				i++
			}
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return false, p.errorf("invalid UTF-8 at offset %d", i)
			}
			i += size
		}
	}
	p.pos = i
	return false, p.syntaxError("unterminated string")
}

// plainASCII marks the bytes a string can contain as themselves: printable ASCII except
// '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// scanNumber advances past an RFC 8259 number starting at p.pos.
func (p *parser) scanNumber() error {
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.syntaxError("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.syntaxError("invalid number: digit expected after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return p.syntaxError("invalid number: digit expected in exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	return nil
}

// appendUnescaped appends the decoded content of a validated JSON string body.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		switch s[i+1] {
		case 'u':
			r, _ := hex4(s, i+2)
			i += 6
			if r >= 0xD800 && r < 0xDC00 {
				r2, _ := hex4(s, i+2)
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}

func (p *parser) key(i int32) []byte {
	n := &p.nodes[i]
	if n.keyInBuf {
		return p.keys[n.keyStart:n.keyEnd]
	}
	return p.data[n.keyStart:n.keyEnd]
}

// stringValue returns the decoded value of a string node.
func (p *parser) stringValue(i int32) string {
	n := &p.nodes[i]
	s := p.data[n.start:n.end]
	if !n.esc {
		return string(s)
	}
	return string(appendUnescaped(nil, s))
}

func (p *parser) write(out []byte, i int32) ([]byte, error) {
	n := &p.nodes[i]
	switch n.kind {
	case kindNull:
		return append(out, "null"...), nil
	case kindTrue:
		return append(out, "true"...), nil
	case kindFalse:
		return append(out, "false"...), nil
	case kindNumber:
		return appendNumber(out, p.data[n.start:n.end])
	case kindString:
		if !n.esc {
			out = append(out, '"')
			out = append(out, p.data[n.start:n.end]...)
			return append(out, '"'), nil
		}
		return appendQuoted(out, appendUnescaped(nil, p.data[n.start:n.end])), nil
	case kindArray:
		out = append(out, '[')
		var err error
		for c := n.first; c >= 0; c = p.nodes[c].next {
			if c != n.first {
				out = append(out, ',')
			}
			if out, err = p.write(out, c); err != nil {
				return out, err
			}
		}
		return append(out, ']'), nil
	default:
		members, base, err := p.sortedMembers(i)
		if err != nil {
			return out, err
		}
		out = append(out, '{')
		for k, c := range members {
			if k > 0 {
				out = append(out, ',')
			}
			out = appendQuoted(out, p.key(c))
			out = append(out, ':')
			if out, err = p.write(out, c); err != nil {
				return out, err
			}
		}
		p.idx = p.idx[:base]
		return append(out, '}'), nil
	}
}

// sortedMembers returns the members of object i sorted by key, rejecting duplicate keys.
// The slice lives in p.idx from base on; the caller truncates p.idx to base when done
// (nested calls only append beyond it).
func (p *parser) sortedMembers(i int32) ([]int32, int, error) {
	base := len(p.idx)
	for c := p.nodes[i].first; c >= 0; c = p.nodes[c].next {
		p.idx = append(p.idx, c)
	}
	members := p.idx[base:len(p.idx):len(p.idx)]
	if len(members) <= 12 {
		for a := 1; a < len(members); a++ {
			for b := a; b > 0 && compareUTF16(p.key(members[b]), p.key(members[b-1])) < 0; b-- {
				members[b], members[b-1] = members[b-1], members[b]
			}
		}
	} else {
		slices.SortFunc(members, func(a, b int32) int { return compareUTF16(p.key(a), p.key(b)) })
	}
	for k := 1; k < len(members); k++ {
		if bytes.Equal(p.key(members[k-1]), p.key(members[k])) {
			p.idx = p.idx[:base]
			return nil, base, p.errorf("duplicate object key %q", p.key(members[k]))
		}
	}
	return members, base, nil
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units, the order of
// JavaScript's default sort. It equals byte order except when a character in
// U+E000..U+FFFF meets one above U+FFFF (a surrogate pair sorts first in UTF-16).
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf || b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return int(utf16First(ra, rb)) - int(utf16First(rb, ra))
}

// utf16First returns the value by which r sorts against other: r itself unless exactly one
// of them is above U+FFFF, in which case a supplementary character is represented by its
// high surrogate.
func utf16First(r, other rune) rune {
	if r > 0xFFFF && other <= 0xFFFF {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s (valid UTF-8) as JSON.stringify writes a string.
func appendQuoted(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendQuotedString is appendQuoted for a Go string, which must be valid UTF-8.
func appendQuotedString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("%w: string is not valid UTF-8", ErrNotCanonicalizable)
	}
	return appendQuoted(dst, []byte(s)), nil
}

// appendNumber appends the ECMAScript form of the JSON number literal lit, or fails when
// the literal's value does not survive conversion to float64.
func appendNumber(dst, lit []byte) ([]byte, error) {
	// Fast path: integers of up to 15 digits are exact doubles and print as themselves.
	if d := lit; len(d) <= 16 {
		if d[0] == '-' {
			d = d[1:]
		}
		if len(d) <= 15 && allDigits(d) {
			if len(d) == 1 && d[0] == '0' {
				return append(dst, '0'), nil // also "-0"
			}
			return append(dst, lit...), nil
		}
	}
	var mbuf [40]byte
	neg, digits, exp := decimalOf(mbuf[:0], lit)
	if len(digits) == 0 {
		return append(dst, '0'), nil // any spelling of zero, including -0.0e5
	}
	if len(digits) <= 15 && exp >= -306 && exp <= 308 {
		// A decimal of at most 15 significant digits in the normal range of doubles is
		// recovered exactly from its nearest double (DBL_DIG = 15), and no shorter decimal
		// maps to that double, so its digits are the shortest form: no float conversion.
		if neg {
			dst = append(dst, '-')
		}
		return appendES(dst, digits, exp), nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f == 0 {
		return dst, fmt.Errorf("%w: number %s is outside the range of an IEEE-754 double; send it as a string", ErrNotCanonicalizable, lit)
	}
	var buf [32]byte
	fdigits, fexp := shortestDigits(buf[:0], math.Abs(f))
	if fexp != exp || !bytes.Equal(fdigits, digits) {
		return dst, fmt.Errorf("%w: number %s cannot be represented exactly by an IEEE-754 double (a JavaScript number would read it as %s); send it as a string, as every amount should be", ErrNotCanonicalizable, lit, strconv.FormatFloat(f, 'g', -1, 64))
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendES(dst, digits, exp), nil
}

func allDigits(d []byte) bool {
	if len(d) == 0 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// decimalOf splits a valid JSON number literal into sign, significant digits (no leading or
// trailing zeros) and exponent n such that |value| = 0.digits × 10^n. Zero has no digits.
// digits may be built in buf.
func decimalOf(buf, lit []byte) (neg bool, digits []byte, exp int) {
	i := 0
	if lit[0] == '-' {
		neg = true
		i++
	}
	var mant []byte
	intDigits := 0
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
		intDigits++
	}
	intStart := i - intDigits
	fracStart, fracEnd := i, i
	if i < len(lit) && lit[i] == '.' {
		i++
		fracStart = i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	e := 0
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if lit[i] == '+' || lit[i] == '-' {
			eneg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if e < 1e8 { // beyond any double; keeps the arithmetic from overflowing
				e = e*10 + int(lit[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
	}
	// Build the digit sequence without copying when there is no fraction.
	if fracEnd == fracStart {
		mant = lit[intStart : intStart+intDigits]
	} else {
		mant = append(buf, lit[intStart:intStart+intDigits]...)
		mant = append(mant, lit[fracStart:fracEnd]...)
	}
	exp = intDigits + e
	for len(mant) > 0 && mant[0] == '0' {
		mant = mant[1:]
		exp--
	}
	for len(mant) > 0 && mant[len(mant)-1] == '0' {
		mant = mant[:len(mant)-1]
	}
	return neg, mant, exp
}

// shortestDigits returns the shortest round-trip digits of f > 0 and the exponent n such
// that f = 0.digits × 10^n. strconv's shortest form picks, like ECMAScript's
// Number::toString, the fewest digits and among those the closest to f.
func shortestDigits(buf []byte, f float64) ([]byte, int) {
	b := strconv.AppendFloat(buf, f, 'e', -1, 64) // d[.ddd]e±XX
	ePos := bytes.IndexByte(b, 'e')
	e, _ := strconv.Atoi(string(b[ePos+1:]))
	digits := b[:ePos]
	if len(digits) > 1 {
		// remove the '.'
		copy(digits[1:], digits[2:])
		digits = digits[:len(digits)-1]
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	return digits, e + 1
}

// appendES writes the positive number 0.digits × 10^n as ECMAScript Number::toString does
// (ECMA-262 Number::toString, radix 10; k = len(digits)).
func appendES(dst, digits []byte, n int) []byte {
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
