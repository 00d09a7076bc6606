// Package jsondepth bounds the nesting of JSON text before anything decodes it. Every JSON
// that Switchboard reads from outside (request bodies, MCP messages on HTTP and stdio, OAuth
// registrations, partner answers, client metadata documents) passes Check first, so a parser
// that keeps state per level (a path, a stack, recursion) never sees more than Max levels, and
// a request's memory stays bounded by its size whatever its shape.
package jsondepth

import "fmt"

// Max is the deepest nesting of objects and arrays accepted, counted from the outermost value
// of the text checked (a request body, one JSON-RPC message). Tool arguments, schemas and
// partner results need a handful of levels; 64 leaves them room and refuses what only an
// attacker sends.
const Max = 64

// Error says that the text nests deeper than Limit; Offset is the byte that opened the level
// past it.
type Error struct {
	Limit  int
	Offset int
}

func (e *Error) Error() string {
	return fmt.Sprintf("nested deeper than %d levels of objects and arrays (at byte %d); send at most %d", e.Limit, e.Offset, e.Limit)
}

// Check returns an *Error when data nests objects and arrays deeper than Max. It scans once,
// allocates nothing, and checks nothing else: syntax is left to the decoder that follows.
func Check(data []byte) error {
	depth, inString := 0, false
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
		case '{', '[':
			depth++
			if depth > Max {
				return &Error{Limit: Max, Offset: i}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
