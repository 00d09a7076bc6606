// Package present is how the portal's pages show values and read forms back: the template
// functions (times, labels, money, JSON, plurals, query strings), form fields and the
// placement of a tool's refusal next to the field it is about, and the spend-policy form.
// Pure functions of values, with no server, session or tool call: the pages (package portal)
// call tools and render; this package decides how what they got reads.
package present

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/tools"
)

// Funcs are the template functions every page may use.
func Funcs() template.FuncMap {
	funcs := template.FuncMap{
		"join":        func(v any) string { return strings.Join(strs(v), ", ") },
		"checked":     func(v any, s string) bool { return slices.Contains(strs(v), s) },
		"field":       fieldOf,
		"str":         Str,
		"when":        when,
		"label":       label,
		"passed":      passed,
		"chargeItems": chargeItems,
		"effectLines": effectLines,
		"catsOf":      catsOf,
		"asks":        asks,
	}
	for k, v := range marketFuncs {
		funcs[k] = v
	}
	for k, v := range movementFuncs {
		funcs[k] = v
	}
	return funcs
}

// How values read on the pages: one timestamp form with the exact UTC time on hover, labels
// for the closed sets' names, and form errors that say what to do instead of quoting the
// schema validator.

// when renders a time (a time.Time or an RFC 3339 string from a tool) as a <time> element:
// "24 Nov 2026, 15:04 UTC", with the exact UTC time to the microsecond on hover. What is not
// a time is shown as text, escaped.
func when(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "never"
		}
		t = *x
	case string:
		p, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return template.HTML(template.HTMLEscapeString(x))
		}
		t = p
	case nil:
		return "never"
	default:
		return template.HTML(template.HTMLEscapeString(fmt.Sprint(v)))
	}
	if t.IsZero() {
		return "never"
	}
	t = t.UTC()
	// Every part comes from formatting a time: nothing here needs escaping.
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		t.Format(time.RFC3339Nano), t.Format("2006-01-02 15:04:05.000000 UTC"), t.Format("2 Jan 2006, 15:04 UTC")))
}

// labels are the names of the closed sets (categories, capabilities, fee units, states,
// verification) as people read them.
var labels = map[string]string{
	"MUTATES_USER_FUNDS": "Moves user funds", "REQUIRES_USER_SIGNATURE": "Needs the user's signature",
	"READS_CHAIN_DATA": "Reads chain data", "CALLS_THIRD_PARTY_API": "Calls a third-party API",
	"RETURNS_EMBED": "Returns an embed", "LONG_RUNNING": "Long-running",
	"usd_per_call": "USD per call", "bps": "basis points of routed value", "flat_usdc": "flat fee in USDC, paid on chain",
	"flat_stablecoin": "flat fee in a stablecoin, paid on chain",
	"UNVERIFIED":      "Unverified", "VERIFIED": "Verified", "PREMIUM": "Premium",
	"REST": "REST", "MCP_HTTP": "MCP over HTTP",
	"awaiting_confirmation": "Awaiting confirmation", "awaiting_payment": "Awaiting payment", "dispatching": "In progress",
	"succeeded": "Succeeded", "failed": "Failed", "cancelled": "Cancelled", "outcome_unknown": "Outcome unknown",
	"email_code": "e-mail code", "oidc": "identity provider", "paste_key": "Paste a key", "email_code_agent": "Agent e-mail code",
	"read": "read", "quote": "quote", "swap": "swap", "bridge": "bridge", "send": "send", "wallet": "wallet", "publish": "publish", "partner": "partner",
	"PASS": "Pass", "FAIL": "Fail", "WARN": "Warning", "OK": "Pass", "REJECTED": "Pass", "ACCEPTED": "Fail",
	"WRONG_STATUS": "Fail", "INCONCLUSIVE": "Inconclusive", "BLOCKED": "Fail", "NO_ANSWER": "Fail",
	"BAD_RESPONSE": "Fail", "PARTNER_FAILURE": "Fail",
	"approval.aboveUsd": "Costs more than your approval amount", "approval.categories": "Its category needs your approval",
	"approval.firstCallToPartner": "The first call to this partner", "hour": "hour", "day": "day", "30d": "30 days",
}

// label is the readable name of an enum value: from the table, else the words of the name.
func label(v any) string {
	s := Str(v)
	if l, ok := labels[s]; ok {
		return l
	}
	if issuer, ok := strings.CutPrefix(s, "oidc:"); ok {
		_, host, _ := strings.Cut(issuer, "://")
		return "identity provider " + host
	}
	if s == "" {
		return ""
	}
	w := strings.ToLower(strings.ReplaceAll(s, "_", " "))
	return strings.ToUpper(w[:1]) + w[1:]
}

// passed says whether a test step's verdict is a pass (for the checklist's mark).
func passed(v any) bool {
	switch Str(v) {
	case "PASS", "OK", "REJECTED":
		return true
	}
	return false
}

var (
	// atLeastOne is a minimum length of one (and not of 10 or 12).
	atLeastOne = regexp.MustCompile(`length must be >= 1\b`)
	missingRe  = regexp.MustCompile(`missing propert(?:y|ies) (.*)`)
	quotedRe   = regexp.MustCompile(`'([^']+)'`)
)

// fieldHints say what a field takes, for validator messages that only quote a pattern.
var fieldHints = map[string]string{
	"publicIdentifier": "start with @, then 3-32 of a-z, 0-9, _ or -, e.g. @acme_quotes",
	"toolEndpoint":     "enter the https URL your endpoint answers at",
	"slug":             "use 3-40 of a-z, 0-9 and -, e.g. my-app",
	"email":            "enter a valid e-mail address",
	"payoutEvm":        "enter an EVM address: 0x and 40 hex digits",
	"payoutAddresses":  "enter an EVM address: 0x and 40 hex digits",
}

// humanize turns a schema validator's message about field into what to do instead.
func humanize(field, msg string) string {
	switch {
	case strings.Contains(msg, "does not match pattern"), strings.Contains(msg, "is not valid"):
		if h, ok := fieldHints[field]; ok {
			return h
		}
		return "this is not in the expected form; see the hint under the field"
	case atLeastOne.MatchString(msg), strings.Contains(msg, "minItems"), strings.Contains(msg, "minimum 1 items"):
		return "fill this in"
	case strings.Contains(msg, "length must be >="):
		return "this is too short; " + strings.TrimSpace(strings.SplitN(msg, "length must be", 2)[1])
	case strings.Contains(msg, "length must be <="):
		return "this is too long; shorten it"
	case strings.Contains(msg, "value must be one of"):
		return "choose one of the listed options"
	case strings.Contains(msg, "expected integer"), strings.Contains(msg, "expected number"):
		return "enter a number"
	case strings.Contains(msg, "must be >="), strings.Contains(msg, "must be <="):
		return "enter a number " + strings.TrimSpace(msg[strings.Index(msg, "must be")+len("must be"):])
	}
	return msg
}

// formField is one form field as the "field" template shows it: its value as sent, and the
// error and hint beside it.
type formField struct{ Name, Label, Value, Error, Hint string }

// fieldOf is form's field name, with its error from errs.
func fieldOf(name, label string, form map[string]any, errs map[string]string, hint string) formField {
	return formField{Name: name, Label: label, Value: Str(form[name]), Error: errs[name], Hint: hint}
}

// Str is a value of a tool's JSON answer as text (a number as written, anything else as JSON).
func Str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// strs is a list of strings of a tool's JSON answer (or of a form), nil for anything else.
func strs(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, s := range x {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

var marketFuncs = template.FuncMap{
	"usd": usd,
	"pct": func(f *float64) string {
		if f == nil {
			return "—"
		}
		return strconv.FormatFloat(*f*100, 'f', 1, 64) + "%"
	},
	"ms": func(v any) string {
		switch x := v.(type) {
		case *int:
			if x != nil {
				return strconv.Itoa(*x) + " ms"
			}
		case *int64:
			if x != nil {
				return strconv.FormatInt(*x, 10) + " ms"
			}
		}
		return "—"
	},
	"intp": func(x *int) string {
		if x == nil {
			return "—"
		}
		return strconv.Itoa(*x)
	},
	"pretty": pretty,
	// plural writes a count with its noun: 1 call, 2 calls.
	"plural": func(n any, one, many string) string {
		if c := fmt.Sprint(n); c != "1" {
			return c + " " + many
		}
		return "1 " + one
	},
	"query": func(kv ...string) template.URL { return template.URL(QueryOf(kv...)) },
}

// usd writes micro-USD (an int64 of ours, or a JSON number of a tool's answer) as USD.
func usd(v any) string {
	switch x := v.(type) {
	case int64:
		return tools.USD(x).String() + " USD"
	case float64:
		return tools.USD(int64(x)).String() + " USD"
	case json.Number:
		n, _ := x.Int64()
		return tools.USD(n).String() + " USD"
	}
	return Str(v) + " USD"
}

// pretty indents JSON for a <pre>; the template escapes it, so the encoder need not.
func pretty(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return Str(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// QueryOf builds "?k=v&..." from pairs, leaving out empty values.
func QueryOf(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
