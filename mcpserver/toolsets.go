package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-hq/switchboard/tools"
)

// HeaderToolsets is where an HTTP host names the toolsets it wants listed (comma-separated);
// ?toolsets= in the endpoint URL does the same for hosts that take no headers.
const HeaderToolsets = "X-MCP-Toolsets"

// codeUnauthenticated is the JSON-RPC error of a tools/list whose key does not authenticate
// (the implementation-defined range; its data is the error model, as a tool error's text is).
const codeUnauthenticated = -32001

// listFilter answers tools/list with what the caller may call, of the toolsets it chose
// (tools.Kernel.Listed). Every tool stays registered, so a tools/call of a tool not listed
// still reaches the kernel and is answered UNAUTHENTICATED or FORBIDDEN, never "unknown
// tool". The go-sdk pages at 1,000 tools, so the whole list is one page to filter.
func listFilter(k *tools.Kernel, defaultKey string, defaultSets []tools.Toolset) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			key, chosen := defaultKey, defaultSets
			if x := req.GetExtra(); x != nil && x.Header != nil {
				h, e := tools.KeyFromHeader(x.Header)
				if e != nil {
					return nil, rpcError(e)
				}
				if h != "" {
					key = h
				}
				if v := x.Header.Values(HeaderToolsets); len(v) > 0 {
					if chosen, e = tools.ParseToolsets(strings.Join(v, ",")); e != nil {
						return nil, rpcError(e)
					}
				}
			}
			listed, err := k.Listed(ctx, key, chosen)
			if err != nil {
				return nil, rpcError(tools.Translate(err))
			}
			res, err := next(ctx, method, req)
			all, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok {
				return res, err
			}
			show := make(map[string]bool, len(listed))
			for _, t := range listed {
				show[t.Name] = true
			}
			out := *all
			out.Tools = make([]*mcp.Tool, 0, len(listed))
			for _, t := range all.Tools {
				if show[t.Name] {
					out.Tools = append(out.Tools, t)
				}
			}
			if key != "" || chosen != nil {
				out.CacheScope = "private" // this caller's list, not everyone's
			}
			return &out, nil
		}
	}
}

// rpcError is a JSON-RPC error carrying the error model as its data.
func rpcError(e *tools.Error) error {
	code := int64(jsonrpc.CodeInternalError)
	switch e.Code {
	case tools.CodeBadInput:
		code = jsonrpc.CodeInvalidParams
	case tools.CodeUnauthenticated:
		code = codeUnauthenticated
	}
	data, _ := json.Marshal(tools.Body{Error: e})
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: data}
}

// withToolsets passes ?toolsets= on as the X-MCP-Toolsets header (the header wins when both
// are sent), and refuses an unknown toolset with 400 before any MCP message is read, so a
// typo in a host's configuration fails its connection with the names that exist instead of
// listing less.
func withToolsets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query, header := r.URL.Query()["toolsets"], r.Header.Values(HeaderToolsets)
		if len(query) == 0 && len(header) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		for _, v := range [][]string{query, header} {
			if _, e := tools.ParseToolsets(strings.Join(v, ",")); e != nil {
				body, _ := json.Marshal(tools.Body{Error: e})
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(body)
				return
			}
		}
		if len(header) == 0 {
			r = r.Clone(r.Context())
			r.Header.Set(HeaderToolsets, strings.Join(query, ","))
		}
		next.ServeHTTP(w, r)
	})
}
