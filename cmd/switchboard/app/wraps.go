package app

import (
	"github.com/switchboard-hq/switchboard/rest"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/payments/x402"
)

// doorWraps are what every door runs its calls through, MCP (stdio and HTTP) and REST alike:
// x402, whose payment travels in headers and _meta beside the arguments. The doors know none.
func doorWraps() []tools.Wrap { return []tools.Wrap{x402.Wrap{}} }

// restWraps are doorWraps as REST's options.
func restWraps() []rest.Option {
	var opts []rest.Option
	for _, w := range doorWraps() {
		opts = append(opts, rest.WithWrap(w))
	}
	return opts
}
