package present_test

import (
	"bytes"
	"encoding/json"
	"html/template"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// The values the templates show go through Funcs, as the pages call them.
func TestValuesAsThePagesShowThem(t *testing.T) {
	funcs := present.Funcs()
	when, label, usd, join := funcs["when"].(func(any) template.HTML), funcs["label"].(func(any) string), funcs["usd"].(func(any) string), funcs["join"].(func(any) string)
	at := time.Date(2026, 11, 24, 15, 4, 5, 123456000, time.UTC)
	for _, c := range []struct {
		in   any
		want template.HTML
	}{
		{at, `<time datetime="2026-11-24T15:04:05.123456Z" title="2026-11-24 15:04:05.123456 UTC">24 Nov 2026, 15:04 UTC</time>`},
		{"2026-11-24T16:04:05+01:00", `<time datetime="2026-11-24T15:04:05Z" title="2026-11-24 15:04:05.000000 UTC">24 Nov 2026, 15:04 UTC</time>`},
		{(*time.Time)(nil), "never"},
		{nil, "never"},
		{time.Time{}, "never"},
		{"<b>soon</b>", "&lt;b&gt;soon&lt;/b&gt;"},
	} {
		if got := when(c.in); got != c.want {
			t.Errorf("When(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	for in, want := range map[string]string{"MUTATES_USER_FUNDS": "Moves user funds", "dispatching": "In progress",
		"oidc:https://accounts.example.com": "identity provider accounts.example.com", "SOMETHING_NEW": "Something new", "": ""} {
		if got := label(in); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		in   any
		want string
	}{{int64(1_250_000), "1.25 USD"}, {float64(3000), "0.003 USD"}, {json.Number("2000000"), "2 USD"}} {
		if got := usd(c.in); got != c.want {
			t.Errorf("USD(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := present.QueryOf("side", "caller", "empty", "", "q", "a b&c"); got != "?q=a+b%26c&side=caller" {
		t.Errorf("QueryOf = %q", got)
	}
	if got := present.QueryOf("empty", ""); got != "" {
		t.Errorf("QueryOf of nothing = %q", got)
	}
	if got := present.Str(json.Number("12")); got != "12" {
		t.Errorf("Str(json.Number) = %q", got)
	}
	if got, want := present.Str(float64(0.5)), "0.5"; got != want {
		t.Errorf("Str(0.5) = %q, want %q", got, want)
	}
	if got := join([]any{"read", 3.0, "partner"}); got != "read, partner" {
		t.Errorf("join = %q", got)
	}
}

func TestTheTemplatesFunctions(t *testing.T) {
	funcs := present.Funcs()
	effects := funcs["effectLines"].(func(map[string]string) []string)
	if got := effects(map[string]string{"send": "2.5 USDC on base to 0xbb", "effects": "1. on base: send 1 units\n\n2. on base: let 0xaa spend UNLIMITED amounts\n"}); !slices.Equal(got,
		[]string{"send 2.5 USDC on base to 0xbb", "1. on base: send 1 units", "2. on base: let 0xaa spend UNLIMITED amounts"}) {
		t.Errorf("effectLines = %q", got)
	}
	if got := effects(map[string]string{"totalUsd": "1"}); got != nil {
		t.Errorf("effectLines of a call's charge = %q", got)
	}
	want := []string{"asks", "catsOf", "chargeItems", "checked", "deref", "effectLines", "explorer", "field", "intp", "join", "kind", "label", "ms", "passed", "pct", "plural", "pretty", "query", "str", "usd", "usdOf", "when"}
	if got := slices.Sorted(maps.Keys(funcs)); !slices.Equal(got, want) {
		t.Fatalf("template functions %v, want %v", got, want)
	}
	tpl := template.Must(template.New("t").Funcs(funcs).Parse(
		`{{plural 1 "call" "calls"}}; {{plural 2 "call" "calls"}}; {{join .Scopes}}; {{if checked .Scopes "swap"}}swap{{end}}; <a href="/c{{query "side" "caller"}}">`))
	var b bytes.Buffer
	if err := tpl.Execute(&b, map[string]any{"Scopes": []any{"read", "swap"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `1 call; 2 calls; read, swap; swap; <a href="/c?side=caller">`; got != want {
		t.Fatalf("rendered %q, want %q", got, want)
	}
}

func TestFieldErrorsSayWhatToDoAtTheField(t *testing.T) {
	e := tools.Errorf(tools.CodeBadInput, "bad input").WithDetails(map[string]any{"problems": []string{
		"at /: missing properties 'name', 'toolEndpoint'",
		"at /publicIdentifier: does not match pattern '^@[a-z0-9_-]{3,32}$'",
		"at /description: length must be >= 10, but got 3",
	}})
	got := present.FieldErrors(e, "name", "toolEndpoint", "publicIdentifier", "description")
	want := map[string]string{
		"name": "fill this in", "toolEndpoint": "fill this in",
		"publicIdentifier": "start with @, then 3-32 of a-z, 0-9, _ or -, e.g. @acme_quotes",
		"description":      "this is too short; >= 10, but got 3",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("FieldErrors = %v, want %v", got, want)
	}
	// A message that names no field is shown above the form's button.
	if got := present.FieldErrors(tools.Errorf(tools.CodeForbidden, "the key cannot do this"), "name"); got["form"] != "the key cannot do this" || len(got) != 1 {
		t.Fatalf("FieldErrors of a message = %v", got)
	}
}

func TestThePolicyFormBothWays(t *testing.T) {
	pol := &billing.Policy{Caps: []billing.Cap{{Window: "day", USD: "5"}}, PerCallMaxUsd: "0.5",
		Deny: billing.Lists{Handles: []string{"@a", "@b"}}, DenyByDefault: true,
		Approval: billing.ApprovalRule{AboveUsd: "1", Categories: []string{"SWAP"}, FirstCallToPartner: true}}
	form := present.PolicyForm(pol)
	if form["cap_day"] != "5" || form["deny_handles"] != "@a, @b" || form["denyByDefault"] != "on" || form["approval_firstCallToPartner"] != "on" {
		t.Fatalf("PolicyForm = %v", form)
	}
	if got := present.ListOf("@a, @b\n@c\t @d"); !slices.Equal(got, []string{"@a", "@b", "@c", "@d"}) {
		t.Fatalf("ListOf = %v", got)
	}
	if got := present.Funcs()["asks"].(func(billing.ApprovalRule) string)(pol.Approval); got != "calls that may cost more than 1 USD; SWAP calls; the first call to each partner" {
		t.Fatalf("Asks = %q", got)
	}
	// caps[1] is the second cap sent: its window comes from the order the form sent them in.
	e := tools.Errorf(tools.CodeBadInput, "caps[1].usd must be more than zero")
	if got := present.PolicyErrors(e, []string{"hour", "30d"}); got["cap_30d"] != "this amount must be more than zero" {
		t.Fatalf("PolicyErrors of a cap = %v", got)
	}
	e = tools.Errorf(tools.CodeBadInput, "deny.handles: no partner @nope; check the handle")
	if got := present.PolicyErrors(e, nil); got["deny_handles"] != "no partner @nope; check the handle" {
		t.Fatalf("PolicyErrors of a list = %v", got)
	}
	tpl := template.Must(template.New("t").Funcs(present.Funcs()).Parse(`{{range chargeItems .}}{{.Label}}={{.USD}};{{end}}`))
	var b bytes.Buffer
	if err := tpl.Execute(&b, map[string]string{"infrastructureUsd": "0.001", "partnerFeeUsd": "0", "totalUsd": "0"}); err != nil {
		t.Fatal(err)
	}
	if items := strings.Split(strings.TrimSuffix(b.String(), ";"), ";"); len(items) != 2 || items[0] != "Infrastructure=0.001" || !strings.Contains(items[1], "total") || !strings.HasSuffix(items[1], "=0") {
		t.Fatalf("chargeItems = %q", b.String())
	}
}
