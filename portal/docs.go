package portal

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"regexp"
	"strings"

	"github.com/switchboard-hq/switchboard/docs"
	"github.com/switchboard-hq/switchboard/portal/apiref"
	"github.com/switchboard-hq/switchboard/sdk"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// The documentation: every page at /docs/<name> as HTML and at /docs/<name>.md as the
// Markdown it is written in (the documentation convention of the spec), with {base} filled
// in; the API reference is rendered from the OpenAPI document.

type docPage struct{ Name, Title string }

type docsData struct {
	Name  string
	HTML  template.HTML
	Pages []docPage
}

// docOrder is every page, in the index's order: the users' quickstarts, then the reference,
// then how Switchboard is run, tested and built (TestEveryDocsPageIsListed keeps it whole).
var docOrder = []docPage{
	{"agents", "Agents"}, {"mcp-hosts", "MCP hosts"}, {"partners", "Partners"}, {"x402", "Paying with x402"}, {"webhooks", "Signed events (webhooks)"}, {"policies", "Spend policies and approvals"},
	{"errors", "Errors"}, {"limits", "Limits"}, {"api", "API reference"},
	{"tools-and-routes", "Tools and routes"}, {"intents", "Intents, invoking and billing"}, {"configuration", "Configuration"},
	{"portal", "The developer portal"}, {"sdks", "SDKs"},
	{"operations", "Operations"}, {"reliability", "Reliability"}, {"performance", "Performance"},
	{"decisions", "Decisions"}, {"layout", "Layout and architecture"}, {"testing", "Testing"}, {"a11y-results", "Accessibility results"},
}

// docImages serves the screenshots the pages show, at the relative URL they use.
var docImages = http.StripPrefix("/docs/", http.FileServerFS(docs.Pages))

// mdLink is a link between pages as the Markdown writes it (errors.md, /docs/errors.md#x, as
// GitHub renders it): the HTML page links the page itself, absolutely, since /docs is not a
// directory.
var mdLink = regexp.MustCompile(`href="(?:/docs/)?([a-z0-9-]+)\.md(#[^"]*)?"`)

var noDoc = tools.Errorf(tools.CodeNotFound, "there is no such documentation page; the documentation index lists them all")

func (p *portal) markdown(name string) ([]byte, bool) {
	if name == "api" {
		return apiref.Markdown(p.o.OpenAPI, p.o.BaseURL), true
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
		fmt.Fprintf(&b, "- [%s](/docs/%s.md)\n", d.Title, d.Name)
	}
	fmt.Fprintf(&b, "\nMachine-readable: [llms.txt](%s/llms.txt), [openapi.json](%s/openapi.json).\n", p.o.BaseURL, p.o.BaseURL)
	p.serveDoc(w, r, "index", []byte(b.String()))
}

func (p *portal) doc(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("page")
	if strings.HasSuffix(name, ".md") {
		md, ok := p.markdown(strings.TrimSuffix(name, ".md"))
		if !ok {
			p.fail(w, r, noDoc)
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(md)
		return
	}
	md, ok := p.markdown(name)
	if !ok {
		p.fail(w, r, noDoc)
		return
	}
	p.serveDoc(w, r, name, md)
}

// sdkReadme serves an SDK's README (sdk.READMEs) at /sdk/<package>/README.md as a page, where
// docs/sdks.md links it.
func (p *portal) sdkReadme(w http.ResponseWriter, r *http.Request) {
	path := r.PathValue("path")
	raw, err := fs.ReadFile(sdk.READMEs, path)
	if err != nil || !strings.HasSuffix(path, "/README.md") {
		p.fail(w, r, noDoc)
		return
	}
	p.serveDoc(w, r, "sdks", raw)
}

func (p *portal) serveDoc(w http.ResponseWriter, r *http.Request, name string, md []byte) {
	if r.URL.Path == "/docs.md" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(md)
		return
	}
	var html bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID())).Convert(md, &html); err != nil {
		p.fail(w, r, tools.Errorf(tools.CodeInternal, "could not render the page; try again, or read it as Markdown"))
		return
	}
	page := mdLink.ReplaceAll(html.Bytes(), []byte(`href="/docs/$1$2"`))
	title := "Docs"
	for _, d := range docOrder {
		if d.Name == name {
			title = d.Title
		}
	}
	v := view{Title: title, Data: docsData{Name: name, HTML: template.HTML(page), Pages: docOrder}}
	if pr := p.sessionOf(r); pr != nil { // the portal's navigation for a signed-in human
		v.SignedIn, v.CSRF = true, p.csrf(pr.SessionID)
	}
	p.render(w, http.StatusOK, "docs", v)
}
