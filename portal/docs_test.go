package portal_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-hq/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard-hq/switchboard/docs"
)

// Every page in docs/ is listed on /docs, served as HTML and as Markdown, and every link and
// image on it that points inside /docs answers, its #section included: a page written with
// GitHub's relative links (name.md, name.md#section, screenshots/x.png, ../sdk/x/README.md)
// works when served.
func TestEveryDocsPageIsListedAndItsLinksResolve(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	h := newHuman(t, env)
	pages, err := fs.Glob(docs.Pages, "*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	_, index := h.get("/docs")
	relative := regexp.MustCompile(`(?:href|src)="([^":/#?][^":?]*?)(?:#([^"]*))?"`)
	for _, file := range pages {
		name := strings.TrimSuffix(file, ".md")
		if !strings.Contains(index, `href="/docs/`+name+`"`) {
			t.Errorf("/docs does not list %s", file)
		}
		st, body := h.get("/docs/" + name)
		if st != 200 || !strings.Contains(body, "<h1") || strings.Contains(body, "{base}") {
			t.Errorf("/docs/%s: %d", name, st)
			continue
		}
		resp, err := http.Get(env.URL + "/docs/" + name + ".md")
		if err != nil {
			t.Fatal(err)
		}
		md, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(md), "# ") {
			t.Errorf("/docs/%s.md: %d %.80q", name, resp.StatusCode, md)
		}
		for _, m := range relative.FindAllStringSubmatch(body, -1) {
			target, section := m[1], m[2]
			// Resolved as a browser does from the page: ../sdk/x/README.md is /sdk/x/README.md.
			ref, err := url.Parse(target)
			if err != nil {
				t.Fatalf("/docs/%s links %q: %v", name, target, err)
			}
			at, _ := url.Parse(env.URL + "/docs/" + name)
			resp, err := http.Get(at.ResolveReference(ref).String()) // not h.get: an image is no page
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			st, linked := resp.StatusCode, string(b)
			if st != 200 {
				t.Errorf("/docs/%s links %s: %d", name, target, st)
			} else if section != "" && !strings.Contains(linked, `id="`+section+`"`) {
				t.Errorf("/docs/%s links %s#%s: no such section", name, target, section)
			}
		}
	}
}
