package portal

import (
	"net/http"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
)

// webhookPages are the Webhooks page's templates: the account's endpoints (create, delete) and
// its latest deliveries with every attempt (replay). Everything goes through the webhook tools.
var webhookPages = []string{"webhooks"}

// webhookEventTypes are the types offered as checkboxes (the tools check them again).
var webhookEventTypes = []string{"call.succeeded", "call.failed", "call.refunded", "approval.requested", "approval.decided", "policy.denied",
	"intent.activated", "intent.deactivated", "payout.settled", "key.created", "key.revoked", "wallet.exported"}

type webhooksData struct {
	Endpoints  []any
	Deliveries []any
	PublicKey  string
	Types      []string
	Created    map[string]any // the endpoint just created, with its secret shown once
	Flash      string
}

func (p *portal) webhooksView(r *http.Request, pr *tools.Principal) (webhooksData, *tools.Error) {
	eps, e := p.call(r, pr, "webhook_endpoint_list", nil)
	if e != nil {
		return webhooksData{}, e
	}
	ds, e := p.call(r, pr, "webhook_delivery_list", map[string]any{"limit": 50})
	if e != nil {
		return webhooksData{}, e
	}
	d := webhooksData{Types: webhookEventTypes, PublicKey: present.Str(eps["publicKey"])}
	d.Endpoints, _ = eps["endpoints"].([]any)
	d.Deliveries, _ = ds["deliveries"].([]any)
	return d, nil
}

func (p *portal) renderWebhooks(w http.ResponseWriter, r *http.Request, pr *tools.Principal, status int, d webhooksData, form map[string]any, errs map[string]string) {
	v := p.page(pr, "Webhooks", d)
	v.Nav, v.Form, v.Errors = "webhooks", form, errs
	p.render(w, status, "webhooks", v)
}

func (p *portal) webhooks(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	d, e := p.webhooksView(r, pr)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	switch {
	case r.URL.Query().Get("deleted") != "":
		d.Flash = "The endpoint was deleted: nothing more is sent to it."
	case r.URL.Query().Get("replayed") != "":
		d.Flash = "The delivery is due again: it is sent within seconds."
	}
	p.renderWebhooks(w, r, pr, http.StatusOK, d, map[string]any{}, nil)
}

func (p *portal) createWebhook(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	form := map[string]any{"url": strings.TrimSpace(r.PostFormValue("url")), "description": strings.TrimSpace(r.PostFormValue("description")), "eventTypes": r.PostForm["eventTypes"]}
	args := map[string]any{"url": form["url"], "description": form["description"]}
	if types := r.PostForm["eventTypes"]; len(types) > 0 {
		args["eventTypes"] = types
	}
	var errs map[string]string
	created, e := p.call(r, pr, "webhook_endpoint_create", args)
	if e != nil {
		errs = present.FieldErrors(e, "url", "eventTypes", "description")
	}
	d, le := p.webhooksView(r, pr)
	if le != nil {
		p.fail(w, r, le)
		return
	}
	if e != nil {
		p.renderWebhooks(w, r, pr, http.StatusUnprocessableEntity, d, form, errs)
		return
	}
	d.Created = created
	p.renderWebhooks(w, r, pr, http.StatusOK, d, map[string]any{}, nil)
}

func (p *portal) deleteWebhook(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if _, e := p.call(r, pr, "webhook_endpoint_delete", map[string]any{"endpointId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/webhooks?deleted=1", http.StatusSeeOther)
}

func (p *portal) replayWebhook(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	if _, e := p.call(r, pr, "webhook_delivery_replay", map[string]any{"deliveryId": r.PathValue("id")}); e != nil {
		p.fail(w, r, e)
		return
	}
	http.Redirect(w, r, "/developer/webhooks?replayed=1", http.StatusSeeOther)
}
