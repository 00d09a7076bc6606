package portal

import (
	"net/http"
	"strings"

	"github.com/switchboard-hq/switchboard/portal/present"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Self-custody: a signed-in human exports the private keys of the account's embedded wallets,
// after a code e-mailed to the account's address just now (a stolen session alone cannot).
// The keys are shown once, in that one response (never stored in the page's URL, never
// cached). wallet_export checks the code and records the export; every other session shows
// it at its next page load (withNotice).

type exportData struct {
	Email    string
	CodeStep bool
	Keys     []wallets.Exported
	Enabled  bool // the service sends e-mail: the code can be sent
}

func (p *portal) exportPage(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	acct, e := p.call(r, pr, "account_get", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	p.render(w, http.StatusOK, "wallet_export", p.page(pr, "Export wallet keys", exportData{Email: present.Str(acct["email"]), Enabled: p.exportEnabled()}))
}

func (p *portal) exportAction(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	acct, e := p.call(r, pr, "account_get", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := exportData{Email: present.Str(acct["email"]), Enabled: p.exportEnabled()}
	if !d.Enabled {
		p.fail(w, r, tools.Errorf(tools.CodeNotFound, "exporting wallet keys needs an e-mailed code, and this service sends no e-mail; ask its operator"))
		return
	}
	v := p.page(pr, "Export wallet keys", d)
	switch r.PostFormValue("action") {
	case "send":
		if _, e := p.call(r.WithContext(onboarding.ForWalletExport(r.Context())), nil, "agent_signup", map[string]any{"email": d.Email}); e != nil {
			v.Errors = map[string]string{"form": e.Message}
			p.render(w, http.StatusUnprocessableEntity, "wallet_export", v)
			return
		}
		d.CodeStep = true
		v.Data = d
		p.render(w, http.StatusOK, "wallet_export", v)
	case "reveal":
		out, e := callAs[wallets.ExportOutput](p, r, pr, "wallet_export", map[string]any{"code": strings.TrimSpace(r.PostFormValue("code"))})
		if e != nil && e.Code.HTTPStatus() >= http.StatusInternalServerError {
			p.fail(w, r, e)
			return
		}
		if e != nil { // the code: wrong, expired, another account's, too many guesses
			d.CodeStep = true
			v.Data, v.Errors = d, map[string]string{"code": e.Message}
			p.render(w, http.StatusUnprocessableEntity, "wallet_export", v)
			return
		}
		d.Keys = out.Keys
		v.Data = d
		p.render(w, http.StatusOK, "wallet_export", v)
	default:
		p.fail(w, r, tools.Errorf(tools.CodeBadInput, "use the buttons of the export page"))
	}
}

// noticeWriter carries the notice of account events to the page rendered on it.
type noticeWriter struct {
	http.ResponseWriter
	notice string
}

// exportEnabled: the service e-mails the code the export asks for.
func (p *portal) exportEnabled() bool {
	return p.o.SignIn != nil && p.o.Kernel.Tool("wallet_export") != nil
}

// withNotice shows, once per session, what another session did to the account.
func (p *portal) withNotice(w http.ResponseWriter, r *http.Request, pr *tools.Principal) http.ResponseWriter {
	if r.Method != http.MethodGet {
		return w
	}
	notice, err := p.o.Sessions.Notice(r.Context(), pr)
	if err != nil {
		p.o.Log.WarnContext(r.Context(), "account events", "err", err)
	}
	if notice == "" {
		return w
	}
	return &noticeWriter{ResponseWriter: w, notice: notice}
}
