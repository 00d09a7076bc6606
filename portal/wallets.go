package portal

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/onboarding"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Self-custody: a signed-in human exports the private keys of the account's embedded wallets,
// after a code e-mailed to the account's address just now (a stolen session alone cannot).
// The keys are shown once, in that one response (never stored in the page's URL, never
// cached); the export is recorded as an account event that every other session shows at its
// next page load.

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
	p.render(w, http.StatusOK, "wallet_export", p.page(pr, "Export wallet keys", exportData{Email: str(acct["email"]), Enabled: p.o.SignIn != nil && p.o.Sealer != nil}))
}

func (p *portal) exportAction(w http.ResponseWriter, r *http.Request, pr *tools.Principal) {
	acct, e := p.call(r, pr, "account_get", nil)
	if e != nil {
		p.fail(w, r, e)
		return
	}
	d := exportData{Email: str(acct["email"]), Enabled: p.o.SignIn != nil && p.o.Sealer != nil}
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
		code := strings.TrimSpace(r.PostFormValue("code"))
		accountID, err := p.o.SignIn(r.Context(), d.Email, code, r.Header.Get(tools.HeaderClientAddr))
		if err == nil && accountID != pr.AccountID {
			err = tools.Errorf(tools.CodeForbidden, "that code is for another account; request a new code here")
		}
		if err != nil {
			d.CodeStep = true
			v.Data, v.Errors = d, map[string]string{"code": tools.Translate(err).Message}
			p.render(w, http.StatusUnprocessableEntity, "wallet_export", v)
			return
		}
		keys, err := wallets.Export(r.Context(), p.o.Store, p.o.Sealer, pr.AccountID)
		if err != nil {
			p.fail(w, r, tools.Translate(err))
			return
		}
		// Recorded before anything is shown: no export goes unrecorded.
		addrs := make([]string, len(keys))
		for i, k := range keys {
			addrs[i] = k.Address
		}
		ev := &store.AccountEvent{ID: uuid.NewString(), AccountID: pr.AccountID, Kind: store.EventWalletExported, SessionID: pr.SessionID,
			ClientAddr: r.Header.Get(tools.HeaderClientAddr), Detail: strings.Join(addrs, ","), CreatedAt: p.o.Now().UTC()}
		if err := wallets.RecordExport(r.Context(), p.o.Store, ev); err != nil {
			p.fail(w, r, tools.Translate(err))
			return
		}
		p.o.Log.InfoContext(r.Context(), "wallet keys exported", "account", pr.AccountID, "session", pr.SessionID) // never the keys
		d.Keys = keys
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

// withNotice shows, once per session, what another session did to the account.
func (p *portal) withNotice(w http.ResponseWriter, r *http.Request, pr *tools.Principal) http.ResponseWriter {
	if r.Method != http.MethodGet || p.o.Store == nil {
		return w
	}
	evs, err := p.o.Store.TakeUnseenEvents(r.Context(), pr.AccountID, pr.SessionID, p.o.Now().UTC())
	if err != nil || len(evs) == 0 {
		if err != nil {
			p.o.Log.WarnContext(r.Context(), "account events", "err", err)
		}
		return w
	}
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == store.EventWalletExported {
			b.WriteString("Your wallets' private keys were exported from another session (" + ev.ClientAddr + ") at " +
				ev.CreatedAt.UTC().Format("2 Jan 2006, 15:04 UTC") + ". If this was not you, move your funds to a new wallet and sign out everywhere in Settings. ")
		}
	}
	return &noticeWriter{ResponseWriter: w, notice: strings.TrimSpace(b.String())}
}
