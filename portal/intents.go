package portal

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
	"github.com/switchboard-hq/switchboard/tools/partners"
)

// The partner pages: the web form the spec describes (Test endpoint, Publish, Activate),
// over the same partner_* tools, validator and publish limit as MCP and REST.

type intentFormData struct {
	Categories, Capabilities, FeeUnits []string
	Test                               map[string]any
}

func newIntentData() intentFormData {
	return intentFormData{Categories: append(append([]string{}, partners.IdempotentCategories...), partners.WriteCategories...),
		Capabilities: partners.Capabilities, FeeUnits: partners.FeeRateUnits}
}

func (p *portal) intents(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	list, e := p.call(r, pr, "partner_list_intents", map[string]any{"includeArchived": true})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "intents", p.page(pr, "Your intents", list))
}

func (p *portal) partnerProfile(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	list, e := p.call(r, pr, "partner_list_intents", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "partner", p.page(pr, "Partner profile", list["partner"]))
}

func (p *portal) newIntentPage(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	v := p.page(pr, "Publish an intent", newIntentData())
	v.Form = map[string]any{"category": "QUERY", "feeRate": "0", "feeRateUnit": partners.FeeUSDPerCall}
	p.render(w, http.StatusOK, "intent_form", v)
}

// newIntent tests the endpoint or publishes the intent the form describes.
func (p *portal) newIntent(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	form := map[string]any{}
	for _, k := range []string{"publicIdentifier", "name", "description", "category", "bindingType", "toolEndpoint", "parametersSchema", "feeRate", "feeRateUnit", "payoutEvm"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	form["capabilities"] = r.PostForm["capabilities"]
	d := newIntentData()
	v := p.page(pr, "Publish an intent", d)
	v.Form, v.Errors = form, map[string]string{}

	if r.PostFormValue("action") == "test" {
		args := map[string]any{"toolEndpoint": form["toolEndpoint"], "bindingType": form["bindingType"]}
		if h := present.Str(form["publicIdentifier"]); h != "" {
			args["publicIdentifier"] = h
		}
		out, e := p.call(r, pr, "partner_test_endpoint", args)
		if e != nil {
			v.Errors = present.FieldErrors(e, "toolEndpoint", "publicIdentifier", "bindingType")
			p.render(w, http.StatusUnprocessableEntity, "intent_form", v)
			return
		}
		d.Test = out
		v.Data = d
		p.render(w, http.StatusOK, "intent_form", v)
		return
	}

	args := map[string]any{"publicIdentifier": form["publicIdentifier"], "name": form["name"], "description": form["description"],
		"category": form["category"], "capabilities": append([]string{}, r.PostForm["capabilities"]...),
		"bindingType": form["bindingType"], "toolEndpoint": form["toolEndpoint"]}
	if u := present.Str(form["feeRateUnit"]); u != "" {
		args["feeRateUnit"] = u
	}
	if s := present.Str(form["parametersSchema"]); s != "" {
		if err := jsonlimit.Request([]byte(s)); err != nil {
			v.Errors["parametersSchema"] = "the schema is " + err.Error()
		} else if !json.Valid([]byte(s)) {
			v.Errors["parametersSchema"] = "not valid JSON; write a JSON Schema object, e.g. {\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"}},\"required\":[\"query\"]}"
		} else if msg := partners.ParametersSchemaProblem(present.Str(form["category"]), present.Str(form["feeRateUnit"]), []byte(s)); msg != "" {
			v.Errors["parametersSchema"] = msg // checked here too: a bad handle would stop the publish before the schema is read
		}
		args["parametersSchema"] = json.RawMessage(s)
	}
	if s := present.Str(form["feeRate"]); s != "" {
		if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, "eE") {
			v.Errors["feeRate"] = "a number, e.g. 0 or 0.001"
		} else {
			args["feeRate"] = json.Number(s)
		}
	}
	if a := present.Str(form["payoutEvm"]); a != "" {
		args["payoutAddresses"] = map[string]string{"evm": a}
	}
	if len(v.Errors) > 0 {
		// Not published: the other fields are still checked, so every problem shows at once
		// (a fee that reads as a number is checked too: a negative one has its own error).
		delete(args, "parametersSchema")
		if _, bad := v.Errors["feeRate"]; bad {
			delete(args, "feeRate")
		}
		if e := p.o.Kernel.Tool("partner_publish_intent").CheckInput(args); e != nil {
			for f, msg := range present.FieldErrors(e, "publicIdentifier", "name", "description", "category", "capabilities", "bindingType", "toolEndpoint", "feeRateUnit", "feeRate", "payoutAddresses") {
				if f != "form" {
					v.Errors[f] = msg
				}
			}
		}
	} else {
		out, e := p.call(r, pr, "partner_publish_intent", args)
		if e == nil {
			http.Redirect(w, r, "/developer/intents/"+present.Str(out["id"])+"?published=1", http.StatusSeeOther)
			return
		}
		v.Errors = present.FieldErrors(e, "publicIdentifier", "name", "description", "category", "capabilities", "bindingType", "toolEndpoint", "parametersSchema", "feeRateUnit", "feeRate", "payoutAddresses")
		if e.Code == tools.CodeConflict { // the handle is taken
			v.Errors = map[string]string{"publicIdentifier": e.Message}
		}
	}
	if msg, ok := v.Errors["payoutAddresses"]; ok {
		v.Errors["payoutEvm"] = msg
	}
	p.render(w, http.StatusUnprocessableEntity, "intent_form", v)
}

type intentData struct {
	Intent   map[string]any
	Test     map[string]any
	Flash    string
	Earnings map[string]any // partner_earnings for this intent: its recent calls, its fees
	Earned   map[string]any // this intent's row of byIntent
}

func (p *portal) findIntent(r *http.Request, pr *tools.Principal, id string) (map[string]any, *tools.Error) {
	list, e := p.call(r, pr, "partner_list_intents", map[string]any{"includeArchived": true})
	if e != nil {
		return nil, e
	}
	items, _ := list["intents"].([]any)
	for _, it := range items {
		if m, _ := it.(map[string]any); present.Str(m["id"]) == id {
			return m, nil
		}
	}
	return nil, tools.Errorf(tools.CodeNotFound, "no intent %s in this account", id)
}

func (p *portal) intentView(r *http.Request, pr *tools.Principal, id string) (view, *tools.Error) {
	in, e := p.findIntent(r, pr, id)
	if e != nil {
		return view{}, e
	}
	earnings, e := p.call(r, pr, "partner_earnings", map[string]any{"intentId": id})
	if e != nil {
		return view{}, e
	}
	d := intentData{Intent: in, Earnings: earnings}
	rows, _ := earnings["byIntent"].([]any)
	for _, row := range rows {
		if m, _ := row.(map[string]any); present.Str(m["intentId"]) == id {
			d.Earned = m
		}
	}
	v := p.page(pr, present.Str(in["publicIdentifier"]), d)
	v.Form = map[string]any{"name": in["name"], "description": in["description"], "toolEndpoint": in["toolEndpoint"],
		"timeoutMs": in["timeoutMs"], "feeRate": in["feeRate"]}
	v.Errors = map[string]string{}
	return v, nil
}

func (p *portal) intent(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	v, e := p.intentView(r, pr, r.PathValue("id"))
	if e != nil {
		p.fail(w, r, e)
		return
	}
	if r.URL.Query().Get("published") != "" {
		d := v.Data.(intentData)
		d.Flash = "Published. It is inactive and only you can call it: test it, then activate it."
		v.Data = d
	}
	p.render(w, http.StatusOK, "intent", v)
}

// intentAction runs one of the intent page's buttons.
func (p *portal) intentAction(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	id := r.PathValue("id")
	var out map[string]any
	var e *tools.Error
	var flash string
	form := map[string]any{}
	switch r.PostFormValue("action") {
	case "test":
		out, e = p.call(r, pr, "partner_test_endpoint", map[string]any{"intentId": id})
	case "activate", "deactivate":
		active := r.PostFormValue("action") == "activate"
		_, e = p.call(r, pr, "partner_set_active", map[string]any{"intentId": id, "active": active})
		flash = map[bool]string{true: "Activated: the probe passed, and the intent is live for everyone.", false: "Deactivated."}[active]
	case "archive":
		_, e = p.call(r, pr, "partner_archive_intent", map[string]any{"intentId": id})
		flash = "Archived. The handle stays taken."
	case "update":
		args := map[string]any{"intentId": id}
		for _, k := range []string{"name", "description", "toolEndpoint", "timeoutMs", "feeRate"} {
			form[k] = strings.TrimSpace(r.PostFormValue(k))
		}
		for _, k := range []string{"name", "description", "toolEndpoint"} {
			args[k] = form[k]
		}
		if n, err := strconv.Atoi(present.Str(form["timeoutMs"])); err == nil {
			args["timeoutMs"] = n
		}
		if f := present.Str(form["feeRate"]); f != "" {
			args["feeRate"] = json.Number(f)
		}
		_, e = p.call(r, pr, "partner_update_intent", args)
		flash = "Saved."
	default:
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "unknown action %q; use the intent page's buttons", r.PostFormValue("action")))
		return
	}
	if e != nil && e.Code == tools.CodeNotFound { // another account's intent, or none
		p.fail(w, r, e)
		return
	}
	v, ve := p.intentView(r, pr, id)
	if ve != nil {
		p.fail(w, r, ve)
		return
	}
	d := v.Data.(intentData)
	status := http.StatusOK
	switch {
	case e != nil:
		status = http.StatusUnprocessableEntity
		v.Errors = present.FieldErrors(e, "name", "description", "toolEndpoint", "timeoutMs", "feeRate")
		if len(form) > 0 {
			v.Form = form
		}
	case out != nil:
		d.Test = out
	default:
		d.Flash = flash
	}
	v.Data = d
	p.render(w, status, "intent", v)
}
