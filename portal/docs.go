package portal

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/switchboard-hq/switchboard/docs"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// The documentation: every page at /docs/<name> as HTML and at /docs/<name>.md as the
// Markdown it is written in (the documentation convention of the spec), with {base} filled
// in; the API reference is generated from the kernel's tools.

type docPage struct{ Name, Title string }

type docsData struct {
	Name  string
	HTML  template.HTML
	Pages []docPage
}

var docOrder = []docPage{{"agents", "Agents"}, {"mcp-hosts", "MCP hosts"}, {"partners", "Partners"}, {"errors", "Errors"}, {"limits", "Limits"}, {"api", "API reference"}}

var mdLink = regexp.MustCompile(`href="([a-z-]+)\.md"`)

func (p *portal) markdown(name string) ([]byte, bool) {
	if name == "api" {
		return p.apiReference(), true
	}
	raw, err := fs.ReadFile(docs.Pages, name+".md")
	if err != nil {
		return nil, false
	}
	return bytes.ReplaceAll(raw, []byte("{base}"), []byte(p.o.BaseURL)), true
}

func (p *portal) docsIndex(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	b.WriteString("# Switchboard documentation\n\n")
	for _, d := range docOrder {
		fmt.Fprintf(&b, "- [%s](%s.md)\n", d.Title, d.Name)
	}
	fmt.Fprintf(&b, "\nMachine-readable: [llms.txt](%s/llms.txt), [openapi.json](%s/openapi.json).\n", p.o.BaseURL, p.o.BaseURL)
	p.serveDoc(w, r, "index", []byte(b.String()))
}

func (p *portal) doc(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("page")
	if strings.HasSuffix(name, ".md") {
		md, ok := p.markdown(strings.TrimSuffix(name, ".md"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(md)
		return
	}
	md, ok := p.markdown(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	p.serveDoc(w, r, name, md)
}

func (p *portal) serveDoc(w http.ResponseWriter, r *http.Request, name string, md []byte) {
	if r.URL.Path == "/docs.md" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(md)
		return
	}
	var html bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md, &html); err != nil {
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	page := mdLink.ReplaceAll(html.Bytes(), []byte(`href="$1"`))
	title := "Docs"
	for _, d := range docOrder {
		if d.Name == name {
			title = d.Title
		}
	}
	p.render(w, http.StatusOK, "docs", view{Title: title, Data: docsData{Name: name, HTML: template.HTML(page), Pages: docOrder}})
}

// apiReference lists every tool: what it does, who may call it, its hints.
func (p *portal) apiReference() []byte {
	var b strings.Builder
	b.WriteString("# API reference\n\nEvery capability is an MCP tool at `" + p.o.BaseURL + "/mcp` and a REST route; the REST routes, ")
	b.WriteString("their parameters and their error responses are in [openapi.json](" + p.o.BaseURL + "/openapi.json) (operationId = tool name).\n\n")
	ts := p.o.Kernel.Tools()
	names := make([]int, len(ts))
	for i := range ts {
		names[i] = i
	}
	sort.Slice(names, func(a, c int) bool { return ts[names[a]].Name < ts[names[c]].Name })
	for _, i := range names {
		t := ts[i]
		fmt.Fprintf(&b, "## `%s` — %s\n\n%s\n\nAccess: %s. Read-only: %v.\n\n", t.Name, t.Title, t.Description, t.Access, *t.Annotations.ReadOnly)
	}
	return []byte(b.String())
}
