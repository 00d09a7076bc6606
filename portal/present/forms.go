package present

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
)

// FieldErrors places a tool's BAD_INPUT or FORBIDDEN message next to the field it is about.
func FieldErrors(e *tools.Error, fields ...string) map[string]string {
	out := map[string]string{}
	problems, _ := e.Details["problems"].([]string)
	if problems == nil && e.Details["problems"] != nil {
		// The partner validator's problems name their field.
		var named []struct{ Field, Message string }
		raw, _ := json.Marshal(e.Details["problems"])
		json.Unmarshal(raw, &named)
		for _, n := range named {
			root, _, _ := strings.Cut(n.Field, ".")
			root, _, _ = strings.Cut(root, "[")
			if _, taken := out[root]; !taken && slices.Contains(fields, root) {
				out[root] = humanize(root, n.Message)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	// Every problem is shown, each at its field: the validator lists them all.
	for _, pr := range problems {
		if m := missingRe.FindStringSubmatch(pr); m != nil && strings.HasPrefix(pr, "at /:") {
			for _, q := range quotedRe.FindAllStringSubmatch(m[1], -1) {
				if slices.Contains(fields, q[1]) {
					out[q[1]] = "fill this in"
				}
			}
			continue
		}
		for _, f := range fields {
			if strings.HasPrefix(pr, "at /"+f+":") || strings.HasPrefix(pr, "at /"+f+"/") {
				if _, taken := out[f]; !taken {
					out[f] = humanize(f, strings.TrimPrefix(pr[strings.Index(pr, ":")+1:], " "))
				}
			}
		}
	}
	if len(out) == 0 {
		for _, f := range fields {
			if strings.Contains(e.Message, f) {
				out[f] = e.Message
				return out
			}
		}
		out["form"] = e.Message
	}
	return out
}

// The spend-policy form (the owner's Policy page) and the approvals inbox.

// chargeItem is one line of an approval's itemized charge.
type chargeItem struct{ Label, USD string }

// chargeParts are an approval's charge lines in the order a bill reads.
var chargeParts = []chargeItem{{"Sent from the wallet", "sendUsd"}, {"Infrastructure", "infrastructureUsd"}, {"Partner fee (at most)", "partnerFeeUsd"}, {"Platform fee", "platformFeeUsd"},
	{"Gas estimate", "gasEstimateUsd"}, {"Flat fee", "flatFeeUsd"}, {"Expected total", "totalUsd"}}

// effectLines are what an approval's movement does on chain, one line each: a wallet send's
// description, a partner's proposed transactions decoded (their charge's "effects").
func effectLines(charge map[string]string) []string {
	var out []string
	if s := charge["send"]; s != "" {
		out = append(out, "send "+s)
	}
	for _, l := range strings.Split(charge["effects"], "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// chargeItems is the charge's lines that are there and not zero (the total always).
func chargeItems(charge map[string]string) []chargeItem {
	var out []chargeItem
	for _, c := range chargeParts {
		if v, ok := charge[c.USD]; ok && (v != "0" || c.USD == "totalUsd") {
			out = append(out, chargeItem{Label: c.Label, USD: v})
		}
	}
	return out
}

// PolicyFields are the form's fields, each where an error about it is shown.
var PolicyFields = []string{"cap_hour", "cap_day", "cap_30d", "perCallMaxUsd",
	"deny_handles", "deny_publishers", "deny_categories", "deny_recipients", "deny_hosts", "deny_contracts", "denyByDefault",
	"allow_handles", "allow_publishers", "allow_categories", "allow_recipients", "allow_hosts", "allow_contracts",
	"approval_aboveUsd", "approval_categories", "approval_firstCallToPartner"}

// ListsOf reads one side's lists (deny or allow) back from the form: every list the policy
// has, so that saving the form never drops one set over the API.
func ListsOf(form map[string]any, side string, categories []string) billing.Lists {
	list := func(name string) []string { return ListOf(Str(form[side+"_"+name])) }
	return billing.Lists{Handles: list("handles"), Publishers: list("publishers"), Categories: categories,
		Recipients: list("recipients"), Hosts: list("hosts"), Contracts: list("contracts")}
}

// listsForm is ListsOf's inverse, into form.
func listsForm(form map[string]any, side string, l billing.Lists) {
	form[side+"_handles"], form[side+"_publishers"], form[side+"_categories"] = strings.Join(l.Handles, ", "), strings.Join(l.Publishers, ", "), l.Categories
	form[side+"_recipients"], form[side+"_hosts"], form[side+"_contracts"] = strings.Join(l.Recipients, ", "), strings.Join(l.Hosts, ", "), strings.Join(l.Contracts, ", ")
}

// PolicyForm is a policy as the form shows it.
func PolicyForm(pol *billing.Policy) map[string]any {
	f := map[string]any{}
	if pol == nil {
		return f
	}
	for _, c := range pol.Caps {
		f["cap_"+c.Window] = c.USD
	}
	f["perCallMaxUsd"] = pol.PerCallMaxUsd
	listsForm(f, "deny", pol.Deny)
	listsForm(f, "allow", pol.Allow)
	if pol.DenyByDefault {
		f["denyByDefault"] = "on"
	}
	f["approval_aboveUsd"], f["approval_categories"] = pol.Approval.AboveUsd, pol.Approval.Categories
	if pol.Approval.FirstCallToPartner {
		f["approval_firstCallToPartner"] = "on"
	}
	return f
}

// ListOf reads a list field: entries separated by commas, spaces or new lines.
func ListOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

var (
	capIndexRe  = regexp.MustCompile(`^caps[\[./](\d+)`)
	capWindowRe = regexp.MustCompile(`the (hour|day|30d) cap`)
	// amountRe and listRe are the policy paths a message starts with, which the field the
	// message is shown at already says.
	amountRe = regexp.MustCompile(`^(caps\[\d+\]\.usd|perCallMaxUsd|approval\.aboveUsd) `)
	listRe   = regexp.MustCompile(`^(allow|deny)\.(handles|publishers|categories|recipients|hosts|contracts): `)
)

// fieldMessage is a policy_set message as the field it is shown at reads it.
func fieldMessage(msg string) string {
	if amountRe.MatchString(msg) {
		return amountRe.ReplaceAllString(msg, "this amount ")
	}
	return listRe.ReplaceAllString(msg, "")
}

// PolicyErrors places policy_set's refusal next to the field it is about: its message names
// the policy's field (caps[1].usd, deny.handles, ...), or the schema validator's problems
// point at it (at /policy/perCallMaxUsd: ...). What names no field is shown above the button.
func PolicyErrors(e *tools.Error, capOrder []string) map[string]string {
	fieldAt := func(path string) string {
		path = strings.ReplaceAll(path, "/", ".")
		if m := capIndexRe.FindStringSubmatch(path); m != nil {
			if i, _ := strconv.Atoi(m[1]); i < len(capOrder) {
				return "cap_" + capOrder[i]
			}
		}
		if m := capWindowRe.FindStringSubmatch(path); m != nil {
			return "cap_" + m[1]
		}
		for _, f := range PolicyFields {
			if dotted := strings.Replace(f, "_", ".", 1); strings.HasPrefix(path, dotted) || strings.HasPrefix(path, f) {
				return f
			}
		}
		return ""
	}
	out := map[string]string{}
	problems, _ := e.Details["problems"].([]string)
	for _, pr := range problems {
		at, msg, ok := strings.Cut(strings.TrimPrefix(pr, "at "), ":")
		if !ok {
			continue
		}
		if f := fieldAt(strings.TrimPrefix(strings.TrimPrefix(at, "/policy"), "/")); f != "" {
			if _, taken := out[f]; !taken {
				out[f] = humanize(f, strings.TrimSpace(msg))
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if f := fieldAt(e.Message); f != "" {
		out[f] = fieldMessage(e.Message)
	} else {
		out["form"] = e.Message
	}
	return out
}

// asks says when a policy's approval rule asks the owner first ("" for never).
func asks(a billing.ApprovalRule) string {
	var parts []string
	if a.AboveUsd != "" {
		parts = append(parts, "calls that may cost more than "+a.AboveUsd+" USD")
	}
	if len(a.Categories) > 0 {
		parts = append(parts, strings.Join(a.Categories, ", ")+" calls")
	}
	if a.FirstCallToPartner {
		parts = append(parts, "the first call to each partner")
	}
	return strings.Join(parts, "; ")
}

// catsField is a fieldset of category checkboxes (the "cats" template).
type catsField struct {
	Name, Label, Error string
	Checked            any
	Options            []string
}

// catsOf is the category fieldset name of the form, with its error from errs.
func catsOf(name, label string, form map[string]any, errs map[string]string, options []string) catsField {
	return catsField{Name: name, Label: label, Error: errs[name], Checked: form[name], Options: options}
}
