package wallets

import (
	"context"
	"strings"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// RecordExport records that an account's wallet keys were exported (ev, an EventWalletExported
// whose Detail lists the addresses), with the wallet.exported webhook event in the same
// transaction: no export goes unrecorded, and the owner's backend hears of every one.
func RecordExport(ctx context.Context, st *store.Store, ev *store.AccountEvent) error {
	wh, err := webhooks.New(webhooks.WalletExported, ev.AccountID, ev.CreatedAt,
		webhooks.WalletExportedData{Addresses: strings.Split(ev.Detail, ","), ClientAddr: ev.ClientAddr})
	if err != nil {
		return err
	}
	return st.RecordAccountEvent(ctx, ev, wh)
}
