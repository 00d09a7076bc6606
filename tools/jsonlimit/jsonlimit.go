// Package jsonlimit bounds JSON text before anything decodes it. Every JSON that Switchboard
// reads from outside (request bodies, MCP messages on HTTP and stdio, OAuth registrations,
// partner answers, client metadata documents) passes Depth first, so a parser that keeps state
// per level (a path, a stack, recursion) never sees more than MaxDepth levels; what a caller
// sends (requests and tool arguments) passes Request, which also bounds how many items it
// holds, so that decoding it costs memory in proportion to a request, not 50 times its size.
package jsonlimit

import "fmt"

// MaxDepth is the deepest nesting of objects and arrays accepted, counted from the outermost
// value of the text checked (a request body, one JSON-RPC message). Tool arguments, schemas
// and partner results need a handful of levels; 64 leaves them room and refuses what only an
// attacker sends.
const MaxDepth = 64

// MaxItems is the most items (array elements and object members) one request may hold. The
// largest real inputs (an intent bundle with its schemas) hold a few thousand; a 1 MiB array
// of 500,000 zeros decoded into Go values held 50 MB.
const MaxItems = 50_000

// Error says that the text nests deeper than MaxDepth (Items false) or holds more than
// MaxItems items (Items true); Offset is the byte where the limit was passed.
type Error struct {
	Items  bool
	Limit  int
	Offset int
}

func (e *Error) Error() string {
	if e.Items {
		return fmt.Sprintf("holds more than %d items (array elements and object members; at byte %d); send at most %d in one request", e.Limit, e.Offset, e.Limit)
	}
	return fmt.Sprintf("nested deeper than %d levels of objects and arrays (at byte %d); send at most %d", e.Limit, e.Offset, e.Limit)
}

// Depth returns an *Error when data nests objects and arrays deeper than MaxDepth.
func Depth(data []byte) error { return scan(data, 0) }

// Request returns an *Error when data nests deeper than MaxDepth or holds more than MaxItems
// items.
func Request(data []byte) error { return scan(data, MaxItems) }

// scan reads data once, allocating nothing, and checks nothing but the limits (maxItems 0:
// none): syntax is left to the decoder that follows. Items are counted as the containers
// opened plus the commas between elements and members, outside strings.
func scan(data []byte, maxItems int) error {
	depth, items, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			continue
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return &Error{Limit: MaxDepth, Offset: i}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
			continue
		case ',':
		default:
			continue
		}
		items++
		if maxItems > 0 && items > maxItems {
			return &Error{Items: true, Limit: maxItems, Offset: i}
		}
	}
	return nil
}
