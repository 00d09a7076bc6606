package tools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
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
//   - a key that appears twice in one object (Go and JSON.parse keep the last, other readers
//     the first: a proxy could see another call than the one dispatched);
//   - invalid UTF-8, and \u escapes of unpaired UTF-16 surrogates (both silently become U+FFFD);
//   - NUL (\u0000) in any key or string.
//
// Syntax errors are left to the decoder, which reports them; CheckJSON stops at the first one.
func CheckJSON(what string, raw []byte) *Error {
	c := jsonChecker{data: raw, what: what, nul: true}
	c.space()
	c.value("")
	return c.err
}

// CheckJSONUnambiguous is CheckJSON without the NUL rule: it refuses only what decoders read
// differently or lossily (duplicate keys, invalid UTF-8, unpaired surrogate escapes). The MCP
// envelope check uses it, so a NUL inside a tool's arguments still reaches the kernel, which
// refuses it as a tool error naming the field.
func CheckJSONUnambiguous(what string, raw []byte) *Error {
	c := jsonChecker{data: raw, what: what}
	c.space()
	c.value("")
	return c.err
}

type jsonChecker struct {
	data []byte
	pos  int
	what string
	nul  bool // refuse NUL (\u0000) too
	err  *Error
}

func (c *jsonChecker) fail(path, format string, args ...any) {
	if c.err != nil {
		return
	}
	if path == "" {
		path = "/"
	}
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

func (c *jsonChecker) value(path string) {
	if c.err != nil || c.pos >= len(c.data) {
		return
	}
	switch c.data[c.pos] {
	case '{':
		c.object(path)
	case '[':
		c.array(path)
	case '"':
		c.str(path, false)
	default: // numbers and literals: the decoder checks them
		for c.pos < len(c.data) && !valueEnd[c.data[c.pos]] {
			c.pos++
		}
	}
}

func (c *jsonChecker) object(path string) {
	c.pos++ // {
	seen := map[string]bool{}
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
		key, ok := c.str(path+"/(key)", true)
		if !ok {
			return
		}
		child := path + "/" + key
		if strings.ContainsAny(key, "~/") {
			child = path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
		}
		if seen[key] {
			c.fail(path, "has the key %q twice; send each key once", key)
			return
		}
		seen[key] = true
		c.space()
		if c.pos < len(c.data) && c.data[c.pos] == ':' {
			c.pos++
		}
		c.space()
		c.value(child)
		c.space()
		if c.pos < len(c.data) && c.data[c.pos] == ',' {
			c.pos++
		}
	}
}

func (c *jsonChecker) array(path string) {
	c.pos++ // [
	for i := 0; c.err == nil; i++ {
		c.space()
		if c.pos >= len(c.data) || c.data[c.pos] == ']' {
			c.pos++
			return
		}
		start := c.pos
		c.value(path + "/" + strconv.Itoa(i))
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
func (c *jsonChecker) str(path string, want bool) (string, bool) {
	d := c.data
	i := c.pos + 1
	var b strings.Builder
	for i < len(d) {
		ch := d[i]
		switch {
		case ch == '"':
			c.pos = i + 1
			return b.String(), true
		case ch == '\\' && i+1 < len(d):
			if d[i+1] != 'u' {
				if want {
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
				c.fail(path, "contains a NUL character (\\u0000); remove it")
				return "", false
			case r >= 0xD800 && r < 0xDC00:
				r2, ok := rune(0), false
				if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
					r2, ok = hex4at(d, i+2)
				}
				if !ok || r2 < 0xDC00 || r2 >= 0xE000 {
					c.fail(path, "has an unpaired UTF-16 surrogate escape (\\u%04x); send the whole character", r)
					return "", false
				}
				i += 6
				if want {
					b.WriteRune(0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00))
				}
			case r >= 0xDC00 && r < 0xE000:
				c.fail(path, "has an unpaired UTF-16 surrogate escape (\\u%04x); send the whole character", r)
				return "", false
			default:
				if want {
					b.WriteRune(r)
				}
			}
		case ch < utf8.RuneSelf:
			if want {
				b.WriteByte(ch)
			}
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				c.fail(path, "is not valid UTF-8 (byte 0x%02x); send UTF-8 text", ch)
				return "", false
			}
			if want {
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
