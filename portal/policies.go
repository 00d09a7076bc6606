package portal

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/policies"
)

// policyPages are the owner's side of spend policies: the approvals inbox (approve or decline
// what a policy sent to them) and the policy page (the account's and each key's policy, what
// the windows have spent and left, and the form that sets one). Everything goes through
// policy_get, policy_set, approval_list and the session-only approval_decide.
var policyPages = []string{"approvals", "policy"}

// keyNames are the account's keys by id (live ones first, as api_key_list lists them).
type keyName struct{ ID, Name string }

func (p *portal) keyNames(r *http.Request, pr *tools.Principal) ([]keyName, *tools.Error) {
	list, e := p.call(r, pr, "api_key_list", nil)
	if e != nil {
		return nil, e
	}
	var out []keyName
	ks, _ := list["keys"].([]any)
	for _, k := range ks {
		if m, ok := k.(map[string]any); ok && m["revokedAt"] == nil {
			out = append(out, keyName{ID: present.Str(m["id"]), Name: present.Str(m["name"])})
		}
	}
	return out, nil
}

// Approvals.

type approvalsData struct {
	Pending, Decided []policies.Approval
	Keys             map[string]string // key id -> name
	Flash            string
}

func (p *portal) approvals(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	list, e := callAs[policies.ListOutput](p, r, pr, "approval_list", map[string]any{"limit": 100})
	if e != nil {
		p.fail(w, r, e)
		return
	}
	keys, e := p.keyNames(r, pr)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := approvalsData{Keys: map[string]string{}}
	for _, k := range keys {
		d.Keys[k.ID] = k.Name
	}
	for _, a := range list.Approvals {
		if a.State == "pending" {
			d.Pending = append(d.Pending, a)
		} else {
			d.Decided = append(d.Decided, a)
		}
	}
	// The one that expires first is the one to decide first.
	slices.SortStableFunc(d.Pending, func(a, b policies.Approval) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	switch q := r.URL.Query(); {
	case q.Get("approved") != "":
		d.Flash = "Approved " + q.Get("approved") + ": the agent's next call with its requestId is sent, once, and charged then."
	case q.Get("declined") != "":
		d.Flash = "Declined " + q.Get("declined") + ": nothing is sent or charged, and the agent is told when it asks again."
	case q.Get("unchanged") != "":
		d.Flash = "That call was decided already or has expired: nothing changed."
	}
	v := p.page(pr, "Approvals", d)
	if n := len(d.Pending); n > 0 {
		v.Title = "Approvals (" + strconv.Itoa(n) + " waiting)"
	}
	p.render(w, http.StatusOK, "approvals", v)
}

func (p *portal) decideApproval(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	var approve bool
	switch r.PostFormValue("decision") {
	case "approve":
		approve = true
	case "decline":
	default:
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "choose Approve or Decline"))
		return
	}
	out, e := callAs[policies.Approval](p, r, pr, "approval_decide", map[string]any{"requestId": r.PathValue("id"), "approve": approve})
	switch {
	case e != nil && e.Code == tools.CodeConflict:
		http.Redirect(w, r, "/developer/approvals?unchanged=1", http.StatusSeeOther)
	case e != nil:
		p.fail(w, r, e)
	case approve:
		http.Redirect(w, r, "/developer/approvals?approved="+url.QueryEscape(out.Handle), http.StatusSeeOther)
	default:
		http.Redirect(w, r, "/developer/approvals?declined="+url.QueryEscape(out.Handle), http.StatusSeeOther)
	}
}

// Policies.

type policyData struct {
	Key        string // the key whose policy the page shows; "" for the account's
	KeyName    string
	Keys       []keyName
	Get        policies.GetOutput
	Categories []string
	Flash      string
}

func (p *portal) policyView(r *http.Request, pr *tools.Principal, key string) (policyData, *tools.Error) {
	keys, e := p.keyNames(r, pr)
	if e != nil {
		return policyData{}, e
	}
	d := policyData{Key: key, Keys: keys, Categories: append(slices.Clone(partners.IdempotentCategories), partners.WriteCategories...)}
	if key != "" {
		i := slices.IndexFunc(keys, func(k keyName) bool { return k.ID == key })
		if i < 0 {
			return policyData{}, tools.Errorf(tools.CodeNotFound, "no live key %s in this account; choose one from the list on the Policy page", key)
		}
		d.KeyName = keys[i].Name
	}
	args := map[string]any{}
	if key != "" {
		args["keyId"] = key
	}
	d.Get, e = callAs[policies.GetOutput](p, r, pr, "policy_get", args)
	return d, e
}

func (p *portal) renderPolicy(w http.ResponseWriter, pr *tools.Principal, status int, d policyData, form map[string]any, errs map[string]string) {
	v := p.page(pr, "Spend policy", d)
	v.Form, v.Errors = form, errs
	p.render(w, status, "policy", v)
}

func (p *portal) policy(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	d, e := p.policyView(r, pr, r.URL.Query().Get("key"))
	if e != nil {
		p.fail(w, r, e)
		return
	}
	own := d.Get.Account
	if d.Key != "" {
		own = d.Get.Key
	}
	if r.URL.Query().Get("saved") != "" {
		d.Flash = "Saved: every call from now on is checked against it."
	}
	p.renderPolicy(w, pr, http.StatusOK, d, present.PolicyForm(own), nil)
}

func (p *portal) setPolicy(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	key := r.PostFormValue("keyId")
	form := map[string]any{}
	for _, f := range present.PolicyFields {
		if strings.HasSuffix(f, "_categories") {
			form[f] = r.PostForm[f]
		} else {
			form[f] = strings.TrimSpace(r.PostFormValue(f))
		}
	}
	pol := billing.Policy{
		PerCallMaxUsd: present.Str(form["perCallMaxUsd"]),
		Deny:          present.ListsOf(form, "deny", r.PostForm["deny_categories"]),
		Allow:         present.ListsOf(form, "allow", r.PostForm["allow_categories"]),
		DenyByDefault: form["denyByDefault"] == "on",
		Approval: billing.ApprovalRule{AboveUsd: present.Str(form["approval_aboveUsd"]), Categories: r.PostForm["approval_categories"],
			FirstCallToPartner: form["approval_firstCallToPartner"] == "on"},
	}
	var capOrder []string // the window of each cap sent, to place an error about caps[i]
	for _, w := range billing.Windows {
		if v := present.Str(form["cap_"+w.Name]); v != "" {
			pol.Caps = append(pol.Caps, billing.Cap{Window: w.Name, USD: v})
			capOrder = append(capOrder, w.Name)
		}
	}
	args := map[string]any{"policy": pol}
	if empty := pol.Normalized(); len(empty.Caps) == 0 && empty.PerCallMaxUsd == "" && !empty.DenyByDefault && empty.Approval.AboveUsd == "" &&
		!empty.Approval.FirstCallToPartner && len(empty.Approval.Categories)+len(empty.Deny.Handles)+len(empty.Deny.Publishers)+len(empty.Deny.Categories)+
		len(empty.Allow.Handles)+len(empty.Allow.Publishers)+len(empty.Allow.Categories) == 0 {
		args["policy"] = nil // nothing filled in: no policy
	}
	if key != "" {
		args["keyId"] = key
	}
	_, e := p.call(r, pr, "policy_set", args)
	if e == nil {
		target := "/developer/policy?saved=1"
		if key != "" {
			target += "&key=" + url.QueryEscape(key)
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	if e.Code != tools.CodeBadInput && e.Code != tools.CodeForbidden && e.Code != tools.CodeNotFound {
		p.fail(w, r, e)
		return
	}
	d, le := p.policyView(r, pr, key)
	if le != nil {
		p.fail(w, r, le)
		return
	}
	p.renderPolicy(w, pr, http.StatusUnprocessableEntity, d, form, present.PolicyErrors(e, capOrder))
}
