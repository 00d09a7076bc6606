package tools

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
)

// CheckText refuses what no field of any tool may hold: a NUL character (databases refuse or
// truncate it, logs and terminals mangle it) and invalid UTF-8 (Go would silently turn it into
// U+FFFD, so the caller's text would not be what was stored or signed). where names the field.
func CheckText(where, s string) *Error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return Errorf(CodeBadInput, "%s contains a NUL character (U+0000) at byte %d; remove it", where, i).
			WithDetails(map[string]any{"field": where})
	}
	if !utf8.ValidString(s) {
		return Errorf(CodeBadInput, "%s is not valid UTF-8; send UTF-8 text", where).WithDetails(map[string]any{"field": where})
	}
	return nil
}

// CheckJSON refuses JSON text that decoders read differently or lossily, naming where the
// problem is as a JSON pointer under what ("arguments", "request body"):
//   - nesting deeper than jsonlimit.MaxDepth levels, or more than jsonlimit.MaxItems items
//     (checked first, before anything keeps state per level: a deep body costs one scan);
//   - a key that appears twice in one object (Go and JSON.parse keep the last, other readers
//     the first: a proxy could see another call than the one dispatched);
//   - invalid UTF-8, and \u escapes of unpaired UTF-16 surrogates (both silently become U+FFFD);
//   - NUL (\u0000) in any key or string.
//
// Syntax errors are left to the decoder, which reports them; CheckJSON stops at the first one.
func CheckJSON(what string, raw []byte) *Error {
	return checkJSON(what, raw, true)
}

// CheckJSONUnambiguous is CheckJSON without the NUL rule: it refuses only JSON past the limits
// and what decoders read differently or lossily (duplicate keys, invalid UTF-8, unpaired
// surrogate escapes). The MCP envelope check uses it, so a NUL inside a tool's arguments still
// reaches the kernel, which refuses it as a tool error naming the field.
func CheckJSONUnambiguous(what string, raw []byte) *Error {
	return checkJSON(what, raw, false)
}

func checkJSON(what string, raw []byte, nul bool) *Error {
	if e := CheckLimits(what, raw); e != nil {
		return e
	}
	c := jsonChecker{data: raw, what: what, nul: nul}
	c.space()
	c.value()
	return c.err
}

// CheckLimits refuses JSON text nested deeper than jsonlimit.MaxDepth or holding more than
// jsonlimit.MaxItems items, naming the limit: what a caller sends is held to both before it is
// decoded.
func CheckLimits(what string, raw []byte) *Error {
	var le *jsonlimit.Error
	if err := jsonlimit.Request(raw); errors.As(err, &le) {
		if le.Items {
			return Errorf(CodeBadInput, "%s holds more than %d items (array elements and object members; at byte %d); send at most %d in one request", what, le.Limit, le.Offset, le.Limit).
				WithDetails(map[string]any{"maxItems": le.Limit, "offset": le.Offset})
		}
		return Errorf(CodeBadInput, "%s is nested deeper than %d levels of objects and arrays (at byte %d); send at most %d levels", what, le.Limit, le.Offset, le.Limit).
			WithDetails(map[string]any{"maxDepth": le.Limit, "offset": le.Offset})
	}
	return nil
}

// jsonChecker walks JSON text at most jsonlimit.MaxDepth levels deep (CheckLimits ran first). Where
// it is, is kept as one segment per level, and turned into a JSON pointer only to report an
// error: a path string built per level would cost memory with the square of the depth.
type jsonChecker struct {
	data []byte
	pos  int
	what string
	nul  bool // refuse NUL (\u0000) too
	err  *Error
	at   []segment  // the keys and indexes from the root to the value being checked
	keys [][]string // per level, the keys of the object being checked there
}

// smallObject is how many keys an object's duplicates are looked for in a list, not a map.
const smallObject = 16

// segment is one step of a JSON pointer: an object's key, or an array's index.
type segment struct {
	key   string
	index int
	isKey bool
}

// pointerEscaper escapes a key as a JSON pointer step; built once (a replacer builds tables of
// 6 KB, which per step cost a 41-byte body 69 KB: found by FuzzCheckJSON).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer renders the path to the current value as a JSON pointer (RFC 6901), with extra
// appended as a last, literal step ("(key)" for a problem in a key itself).
func (c *jsonChecker) pointer(extra string) string {
	var b strings.Builder
	for _, s := range c.at {
		b.WriteByte('/')
		if s.isKey {
			b.WriteString(pointerEscaper.Replace(s.key))
		} else {
			b.WriteString(strconv.Itoa(s.index))
		}
	}
	if extra != "" {
		b.WriteString("/" + extra)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

func (c *jsonChecker) fail(extra, format string, args ...any) {
	if c.err != nil {
		return
	}
	path := c.pointer(extra)
	c.err = Errorf(CodeBadInput, "%s: %s %s", c.what, path, fmt.Sprintf(format, args...)).
		WithDetails(map[string]any{"at": path})
}

func (c *jsonChecker) space() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *jsonChecker) value() {
	if c.err != nil || c.pos >= len(c.data) {
		return
	}
	switch c.data[c.pos] {
	case '{', '[':
		// CheckLimits bounded the depth of well-formed text; text it reads otherwise (a
		// literal running into a string's quote) must not take the walk deeper.
		if len(c.at) >= jsonlimit.MaxDepth {
			c.fail("", "is nested deeper than %d levels of objects and arrays; send at most %d levels", jsonlimit.MaxDepth, jsonlimit.MaxDepth)
			return
		}
		if c.data[c.pos] == '{' {
			c.object()
		} else {
			c.array()
		}
	case '"':
		c.str("", false)
	default: // numbers and literals: the decoder checks them
		for c.pos < len(c.data) && !valueEnd[c.data[c.pos]] {
			c.pos++
		}
	}
}

func (c *jsonChecker) object() {
	c.pos++ // {
	// Duplicates are found in a list of the keys reused per level, and in a map only past
	// smallObject keys: most objects are small, and a map each would cost 20 times the body.
	level := len(c.at)
	for len(c.keys) <= level {
		c.keys = append(c.keys, nil)
	}
	keys := c.keys[level][:0]
	defer func() { c.keys[level] = keys[:0] }()
	var seen map[string]struct{} // struct{}: a third less per key than bool
	for c.err == nil {
		c.space()
		if c.pos >= len(c.data) || c.data[c.pos] == '}' {
			c.pos++
			return
		}
		if c.data[c.pos] != '"' {
			c.pos = len(c.data) // a syntax error: the decoder reports it
			return
		}
		key, ok := c.str("(key)", true)
		if !ok {
			return
		}
		var dup bool
		switch {
		case seen != nil:
			_, dup = seen[key]
			seen[key] = struct{}{}
		case len(keys) < smallObject:
			dup, keys = slices.Contains(keys, key), append(keys, key)
		default:
			seen = make(map[string]struct{}, 2*smallObject)
			for _, k := range keys {
				seen[k] = struct{}{}
			}
			_, dup = seen[key]
			seen[key] = struct{}{}
		}
		if dup {
			c.fail("", "has the key %q twice; send each key once", key)
			return
		}
		c.space()
		if c.pos < len(c.data) && c.data[c.pos] == ':' {
			c.pos++
		}
		c.space()
		c.at = append(c.at, segment{isKey: true, key: key})
		c.value()
		c.at = c.at[:len(c.at)-1]
		c.space()
		if c.pos < len(c.data) && c.data[c.pos] == ',' {
			c.pos++
		}
	}
}

func (c *jsonChecker) array() {
	c.pos++ // [
	c.at = append(c.at, segment{})
	defer func() { c.at = c.at[:len(c.at)-1] }()
	for i := 0; c.err == nil; i++ {
		c.space()
		if c.pos >= len(c.data) || c.data[c.pos] == ']' {
			c.pos++
			return
		}
		start := c.pos
		c.at[len(c.at)-1].index = i
		c.value()
		c.space()
		if c.pos < len(c.data) && c.data[c.pos] == ',' {
			c.pos++
		}
		if c.pos == start { // no progress: a syntax error the decoder reports
			c.pos = len(c.data)
			return
		}
	}
}

// str scans a string literal, checking its UTF-8 and escapes; with want (keys) it also
// returns the string's value.
func (c *jsonChecker) str(extra string, want bool) (string, bool) {
	d := c.data
	start := c.pos + 1
	i := start
	var b strings.Builder
	building := false // b holds the value: an escape was met (else the value is the raw bytes)
	for i < len(d) {
		ch := d[i]
		switch {
		case ch == '"':
			c.pos = i + 1
			if want && !building {
				return string(d[start:i]), true
			}
			return b.String(), true
		case ch == '\\' && i+1 < len(d):
			if want && !building {
				building = true
				b.Grow(2 * (i - start + 16))
				b.Write(d[start:i])
			}
			if d[i+1] != 'u' {
				if building {
					b.WriteByte(d[i+1])
				}
				i += 2
				continue
			}
			r, ok := hex4at(d, i+2)
			if !ok {
				c.pos = len(d)
				return "", false
			}
			i += 6
			switch {
			case r == 0 && c.nul:
				c.fail(extra, "contains a NUL character (\\u0000); remove it")
				return "", false
			case r >= 0xD800 && r < 0xDC00:
				r2, ok := rune(0), false
				if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					r2, ok = hex4at(d, i+2)
				}
				if !ok || r2 < 0xDC00 || r2 >= 0xE000 {
					c.fail(extra, "has an unpaired UTF-16 surrogate escape (\\u%04x); send the whole character", r)
					return "", false
				}
				i += 6
				if building {
					b.WriteRune(0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00))
				}
			case r >= 0xDC00 && r < 0xE000:
				c.fail(extra, "has an unpaired UTF-16 surrogate escape (\\u%04x); send the whole character", r)
				return "", false
			default:
				if building {
					b.WriteRune(r)
				}
			}
		case ch < utf8.RuneSelf:
			if building {
				b.WriteByte(ch)
			}
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				c.fail(extra, "is not valid UTF-8 (byte 0x%02x); send UTF-8 text", ch)
				return "", false
			}
			if building {
				b.WriteRune(r)
			}
			i += size
		}
	}
	c.pos = len(d)
	return "", false
}

// valueEnd marks the bytes that end a number or a literal.
var valueEnd = [256]bool{',': true, ']': true, '}': true, ' ': true, '\t': true, '\n': true, '\r': true}

func hex4at(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d[i:i+4]), 16, 32)
	return rune(n), err == nil
}
