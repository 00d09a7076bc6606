package portal

import (
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"time"
)

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
	s := str(v)
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
	switch str(v) {
	case "PASS", "OK", "REJECTED":
		return true
	}
	return false
}

var (
	missingRe = regexp.MustCompile(`missing propert(?:y|ies) (.*)`)
	quotedRe  = regexp.MustCompile(`'([^']+)'`)
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
	case strings.Contains(msg, "length must be >= 1"), strings.Contains(msg, "minItems"), strings.Contains(msg, "minimum 1 items"):
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
