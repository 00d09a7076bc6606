package tools

import (
	"encoding/json"
	"net/http"
)

// Door names the transport a call came through, for a Wrap that reads one differently from
// the other.
type Door string

const (
	DoorREST Door = "rest"
	DoorMCP  Door = "mcp"
)

// Exchange is one call's transport as a Wrap sees it: what the door received beside the
// arguments, and what it sends back beside the answer's body.
type Exchange struct {
	Door   Door
	Tool   *Tool          // the tool called
	Header http.Header    // the request's headers: REST, and MCP over HTTP; nil over stdio
	Meta   map[string]any // MCP's params._meta; nil on REST
	Reply  Reply
}

// Reply is what a Wrap adds to a door's answer.
type Reply struct {
	Header http.Header    // REST: the answer's headers (nil on MCP, whose transport takes none from a tool)
	Meta   map[string]any // MCP: the result's _meta
	// Structured is MCP's structuredContent of an error result, which the door also shows as
	// its first text, before the error model's body.
	Structured json.RawMessage
}

// Wrap extends every call through a door with what travels in the transport rather than in
// the arguments (x402's payment headers and _meta). Doors take wraps at construction, so they
// hold no such rule themselves: In runs before the kernel, in order; Out once on the outcome
// the door answers with, in order.
type Wrap interface {
	// In reads the transport into req (its Args, say). An error is answered as it is,
	// without calling the kernel.
	In(x *Exchange, req *Request) *Error
	// Out adds to x.Reply what the outcome needs, and returns the error as the door shows it:
	// e when it changes nothing, nil when e is nil.
	Out(x *Exchange, out any, e *Error) *Error
}

// WrapIn runs every wrap's In on req; the first error stops them.
func WrapIn(ws []Wrap, x *Exchange, req *Request) *Error {
	for _, w := range ws {
		if e := w.In(x, req); e != nil {
			return e
		}
	}
	return nil
}

// WrapOut runs every wrap's Out on the outcome and returns the error as the door shows it.
func WrapOut(ws []Wrap, x *Exchange, out any, e *Error) *Error {
	for _, w := range ws {
		e = w.Out(x, out, e)
	}
	return e
}
