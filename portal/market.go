package portal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/chart"
	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/discover"
	"github.com/switchboard-hq/switchboard/tools/jsonlimit"
	"github.com/switchboard-hq/switchboard/tools/usage"
)

// The marketplace (public), Try it (signed in, through invoke_partner_message like every
// other door), the charts and the call logs. Data come from tools/discover and tools/usage;
// the rules (ranking, what a call cost, who may see which call) live there.

var marketPages = []string{"marketplace", "listing", "usage", "intent_usage", "calls", "call"}

// marketRoutes serves the pages whose services are configured.
func (p *portal) marketRoutes(mux *http.ServeMux) {
	if p.o.Marketplace != nil {
		mux.HandleFunc("GET /marketplace", p.marketplace)
		mux.HandleFunc("GET /marketplace/{handle}", p.listing)
		mux.Handle("POST /marketplace/{handle}", p.authed(p.tryIntent))
	}
	if p.o.Kernel.Tool("usage_spend") == nil {
		return
	}
	mux.Handle("GET /developer/usage", p.authed(p.usagePage))
	mux.Handle("GET /developer/usage/intents/{id}", p.authed(p.intentUsage))
	mux.Handle("GET /developer/calls", p.authed(p.calls))
	mux.Handle("GET /developer/calls/{id}", p.authed(p.call1))
	mux.Handle("POST /developer/tasks/{id}/cancel", p.authed(p.cancelTask))
}

// viewFor is a page for whoever is there: signed in or not.
func (p *portal) viewFor(pr *tools.Principal, title string, data any) view {
	if pr == nil {
		return view{Title: title, Data: data}
	}
	return p.page(pr, title, data)
}

type marketData struct {
	Query         discover.BrowseQuery
	Result        discover.BrowseResult
	Categories    []string
	PriceKinds    []discover.PriceKind
	Verifications []string
}

func (p *portal) marketplace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	bq := discover.BrowseQuery{Query: strings.TrimSpace(q.Get("q")), Category: q.Get("category"), PriceKind: q.Get("price"), Verification: q.Get("verification")}
	d := marketData{Query: bq, Categories: discover.Categories(), PriceKinds: discover.PriceKinds, Verifications: discover.Verifications}
	v := p.viewFor(p.sessionOf(r), "Marketplace", nil)
	status := http.StatusOK
	var err error
	if len(bq.Query) > 500 {
		err = tools.Errorf(tools.CodeBadInput, "the search is too long; describe what you need in a few words")
	} else {
		d.Result, err = p.o.Marketplace.Browse(r.Context(), bq)
	}
	if err != nil {
		e := tools.Translate(err)
		if e.Code != tools.CodeBadInput {
			p.fail(w, r, e)
			return
		}
		v.Errors, status = map[string]string{"q": e.Message}, http.StatusBadRequest
	}
	v.Data = d
	p.render(w, status, "marketplace", v)
}

type listingData struct {
	discover.Detail
	Try tryData
}

// tryData is what Try it shows after a post.
type tryData struct {
	Result         map[string]any // the invocation's answer
	Confirm        map[string]any // a write's itemized quote, nothing dispatched yet
	ConfirmMessage string
	Quote          map[string]any // a flat-fee intent's quote
	QuoteMessage   string
}

func (p *portal) listingView(r *http.Request, pr *tools.Principal) (view, *tools.Error) {
	d, err := p.o.Marketplace.Listed(r.Context(), r.PathValue("handle"), p.o.BaseURL)
	if err != nil {
		return view{}, tools.Translate(err)
	}
	v := p.viewFor(pr, d.Handle, listingData{Detail: d})
	v.Form, v.Errors = map[string]any{}, map[string]string{}
	for _, pm := range d.Params {
		v.Form["arg."+pm.Name] = pm.Default
	}
	return v, nil
}

func (p *portal) listing(w http.ResponseWriter, r *http.Request) {
	v, e := p.listingView(r, p.sessionOf(r))
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "listing", v)
}

// tryIntent invokes the intent with the signed-in human as the caller, through
// invoke_partner_message: a write answers its itemized quote first and is dispatched only
// when the human confirms it; a flat-fee intent answers its quote.
func (p *portal) tryIntent(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	v, e := p.listingView(r, pr)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := v.Data.(listingData)
	message := d.Handle
	args := map[string]any{"message": message}
	switch r.PostFormValue("action") {
	case "confirm":
		args["confirmRequestId"] = strings.TrimSpace(r.PostFormValue("confirmRequestId"))
		if d.QueryOnly { // the message it was quoted with: a confirmation says the same
			if query := strings.TrimSpace(r.PostFormValue("query")); query != "" {
				args["message"] = message + " " + query
			}
		}
	case "try":
		if d.QueryOnly {
			query := strings.TrimSpace(r.PostFormValue("query"))
			v.Form["query"] = query
			if query == "" {
				v.Errors["query"] = "type your request, e.g. what you would ask the partner"
			}
			args["message"] = message + " " + query
		} else {
			given, errs := argsFromForm(r, d.Params, v.Form)
			for k, m := range errs {
				v.Errors[k] = m
			}
			args["args"] = given
		}
	default:
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "unknown action %q; use the page's buttons", r.PostFormValue("action")))
		return
	}
	status := http.StatusOK
	caller := pr
	if p.o.TryAs != nil {
		var err error
		if caller, err = p.o.TryAs(r.Context(), pr, d.Scopes); err != nil {
			p.fail(w, r, tools.Translate(err))
			return
		}
	}
	if len(v.Errors) == 0 {
		out, e := p.call(r, caller, "invoke_partner_message", args)
		switch {
		case e == nil:
			d.Try.Result = out
		case e.Code == tools.CodeConfirmationRequired:
			d.Try.Confirm, d.Try.ConfirmMessage = asJSON(e.Details), e.Message
		case e.Code == tools.CodePaymentRequired:
			d.Try.Quote, d.Try.QuoteMessage = asJSON(e.Details), e.Message
		case e.Code == tools.CodeBadInput:
			fields := []string{"query"}
			for _, pm := range d.Params {
				fields = append(fields, pm.Name)
			}
			for k, m := range present.FieldErrors(e, fields...) {
				if k != "form" && k != "query" {
					k = "arg." + k
				}
				v.Errors[k] = m
			}
			status = http.StatusUnprocessableEntity
		default:
			v.Errors["form"] = e.Message
			status = e.Code.HTTPStatus()
		}
	} else {
		status = http.StatusUnprocessableEntity
	}
	v.Data = d
	p.render(w, status, "listing", v)
}

// asJSON is an error's details as its JSON reads (what an agent gets), for the templates.
func asJSON(details map[string]any) map[string]any {
	if details == nil {
		return nil
	}
	b, _ := json.Marshal(details)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // amounts print as sent (0.000001, not 1e-06)
	dec.Decode(&m)
	return m
}

// argsFromForm turns the generated form's fields into the args object, typed as the
// parametersSchema says; what cannot be read is an error next to its field.
func argsFromForm(r *http.Request, params []discover.Param, form map[string]any) (map[string]any, map[string]string) {
	args, errs := map[string]any{}, map[string]string{}
	for _, pm := range params {
		key := "arg." + pm.Name
		raw := strings.TrimSpace(r.PostFormValue(key))
		if pm.Type == "boolean" {
			raw = map[bool]string{true: "true", false: ""}[r.PostFormValue(key) == "on"]
		}
		form[key] = raw
		if raw == "" {
			if pm.Type == "boolean" && pm.Required {
				args[pm.Name] = false
			} else if pm.Required {
				errs[key] = "required: fill it in"
			}
			continue
		}
		switch pm.Type {
		case "boolean":
			args[pm.Name] = true
		case "integer":
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				errs[key] = "a whole number, e.g. 3"
				continue
			}
			args[pm.Name] = n
		case "number":
			if _, err := strconv.ParseFloat(raw, 64); err != nil || strings.ContainsAny(raw, "eE") {
				errs[key] = "a number, e.g. 2.5"
				continue
			}
			args[pm.Name] = json.Number(raw)
		case "json":
			if err := jsonlimit.Request([]byte(raw)); err != nil {
				errs[key] = "the value is " + err.Error()
				continue
			}
			if !json.Valid([]byte(raw)) {
				errs[key] = "not valid JSON; write the value as JSON, e.g. {\"a\": 1} or [1, 2]"
				continue
			}
			args[pm.Name] = json.RawMessage(raw)
		default:
			args[pm.Name] = raw
		}
	}
	return args, errs
}

// Charts.

type usageData struct {
	Spend   usage.Spend
	Total   chart.Chart
	ByKey   []keyChart
	Intents []any // the account's intents (partner_list_intents), for their charts
}

type keyChart struct {
	usage.Series
	Chart chart.Chart
}

func (p *portal) usagePage(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	sp, e := callAs[usage.Spend](p, r, pr, "usage_spend", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	list, e := p.call(r, pr, "partner_list_intents", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := usageData{Spend: sp}
	d.Intents, _ = list["intents"].([]any)
	micro := func(x int64) float64 { return float64(x) }
	d.Total = chart.Chart{Title: "Spend per day, all keys", Days: sp.Days, Format: chart.USD, Href: "/developer/calls",
		Series: []chart.Series{{Label: "spent", Class: "s1", Values: chart.Values(sp.Total.Values, micro)}}}
	for _, k := range sp.ByKey {
		href := "/developer/calls" + present.QueryOf("key", k.KeyID)
		if k.KeyID == "" {
			href = "/developer/calls"
		}
		d.ByKey = append(d.ByKey, keyChart{Series: k, Chart: chart.Chart{Title: "Spend per day, " + k.Label, Days: sp.Days, Format: chart.USD, Href: href,
			Series: []chart.Series{{Label: "spent", Class: "s1", Values: chart.Values(k.Values, micro)}}}})
	}
	p.render(w, http.StatusOK, "usage", p.page(pr, "Usage", d))
}

type intentUsageData struct {
	Stats                             usage.IntentStats
	Calls, Success, Latency, Earnings chart.Chart
	SuccessRate                       *float64
}

func (p *portal) intentUsage(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	st, e := callAs[usage.IntentStats](p, r, pr, "usage_intent", map[string]any{"intentId": r.PathValue("id")})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	n := len(st.Days)
	days := make([]string, n)
	ok, failed, rate, p50, p95, earned := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	f := func(x float64) *float64 { return &x }
	for i, d := range st.Days {
		days[i] = d.Day
		ok[i], failed[i], earned[i] = f(float64(d.Succeeded)), f(float64(d.Calls-d.Succeeded)), f(float64(d.EarnedMicro))
		if d.SuccessRate != nil {
			rate[i] = f(*d.SuccessRate * 100)
		}
		if d.P50 != nil {
			p50[i], p95[i] = f(float64(*d.P50)), f(float64(*d.P95))
		}
	}
	href := "/developer/calls" + present.QueryOf("side", "partner", "intent", st.IntentID)
	count := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	d := intentUsageData{Stats: st,
		Calls: chart.Chart{Title: "Calls per day", Days: days, Format: count, Href: href,
			Series: []chart.Series{{Label: "succeeded", Class: "s1", Values: ok}, {Label: "failed", Class: "s3", Values: failed}}},
		Success: chart.Chart{Title: "Success rate per day", Days: days, Lines: true, Href: href + "&outcome=failed",
			Format: func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "%" },
			Series: []chart.Series{{Label: "success rate", Class: "s1", Values: rate}}},
		Latency: chart.Chart{Title: "Latency per day", Days: days, Lines: true, Href: href,
			Format: func(v float64) string { return count(v) + " ms" },
			Series: []chart.Series{{Label: "p50", Class: "s1", Values: p50}, {Label: "p95", Class: "s2", Values: p95}}},
		Earnings: chart.Chart{Title: "Earnings per day", Days: days, Format: chart.USD, Href: href + "&outcome=succeeded",
			Series: []chart.Series{{Label: "earned", Class: "s2", Values: earned}}},
	}
	if st.Calls > 0 {
		rt := float64(st.Succeeded) / float64(st.Calls)
		d.SuccessRate = &rt
	}
	p.render(w, http.StatusOK, "intent_usage", p.page(pr, st.Handle+" usage", d))
}

// Call logs.

type callsData struct {
	Side     usage.Side
	Filter   usage.Filter
	Page     usage.Page
	Keys     []any // the caller's keys (api_key_list), for the key filter
	Intents  []any // the partner's intents (partner_list_intents), for the intent filter
	Outcomes []string
	Kinds    []string
	Handle   string // the filtered intent's handle, when known
	Limit    string // the page size asked for, "" for the default
	Running  []any  // the caller's working tasks (task_list), on the first page of its own calls
	Flash    string
}

func sideOf(r *http.Request) usage.Side {
	if r.URL.Query().Get("side") == string(usage.Partner) {
		return usage.Partner
	}
	return usage.Caller
}

func (p *portal) calls(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	q := r.URL.Query()
	d := callsData{Side: sideOf(r), Outcomes: usage.Outcomes, Kinds: usage.Kinds,
		Filter: usage.Filter{KeyID: q.Get("key"), IntentID: q.Get("intent"), Outcome: q.Get("outcome"), Kind: q.Get("kind"), Cursor: q.Get("cursor")}}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil { // usage bounds it
		d.Filter.Limit, d.Limit = n, q.Get("limit")
	}
	for _, s := range []string{d.Filter.KeyID, d.Filter.IntentID, d.Filter.Cursor} {
		if len(s) > 200 {
			p.fail(w, r, tools.Errorf(tools.CodeBadInput, "a filter is too long; start again from the call log"))
			return
		}
	}
	if d.Side == usage.Partner {
		d.Filter.KeyID = "" // a partner never filters by the caller's keys
		list, e := p.call(r, pr, "partner_list_intents", map[string]any{"includeArchived": true})
		if e != nil {
			p.fail(w, r, e)
			return
		}
		d.Intents, _ = list["intents"].([]any)
	} else {
		list, e := p.call(r, pr, "api_key_list", nil)
		if e != nil {
			p.fail(w, r, e)
			return
		}
		d.Keys, _ = list["keys"].([]any)
		if d.Filter.Cursor == "" {
			running, e := p.call(r, pr, "task_list", nil)
			if e != nil {
				p.fail(w, r, e)
				return
			}
			d.Running, _ = running["tasks"].([]any)
		}
		if q.Get("cancelled") != "" {
			d.Flash = "Cancel asked: the partner call stops and its hold is refunded; the call below ends cancelled."
		}
	}
	f := d.Filter
	page, e := callAs[usage.Page](p, r, pr, "usage_calls", usage.CallsInput{Side: d.Side, KeyID: f.KeyID, IntentID: f.IntentID, Outcome: f.Outcome, Kind: f.Kind, Cursor: f.Cursor, Limit: f.Limit})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d.Page = page
	if d.Filter.IntentID != "" && len(page.Rows) > 0 {
		d.Handle = page.Rows[0].Handle
	}
	title := "Your calls"
	if d.Side == usage.Partner {
		title = "Calls to your intents"
	}
	p.render(w, http.StatusOK, "calls", p.page(pr, title, d))
}

type callData struct {
	Side usage.Side
	Call usage.Detail
}

func (p *portal) call1(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	side := sideOf(r)
	c, e := callAs[usage.Detail](p, r, pr, "usage_call", usage.CallInput{Side: side, RequestID: r.PathValue("id")})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "call", p.page(pr, fmt.Sprintf("Call %s", c.RequestID), callData{Side: side, Call: c}))
}

// cancelTask cancels one of the caller's running tasks (task_cancel, as DELETE /v1/tasks/{id}).
func (p *portal) cancelTask(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if _, e := p.call(r, pr, "task_cancel", map[string]any{"taskId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/calls?cancelled=1", http.StatusSeeOther)
}
