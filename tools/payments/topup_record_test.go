package payments_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-hq/switchboard/contracts/anviltest"
	"github.com/switchboard-hq/switchboard/store/spending"
)

// topupRecords checks that the buyer's record holds exactly the top-ups credited (values in
// USD, newest first), each once whatever was retried, replayed or swept: in GET /v1/usage
// with kind topup, by the buyer's key, with its value, network and transaction; that the
// kind filter keeps them apart from calls; and that none counts as spending in any policy
// window.
func topupRecords(t *testing.T, w *topupWorld, values ...string) {
	t.Helper()
	status, keys := w.env.REST(t, "GET", "/v1/keys", w.key, nil)
	list, _ := keys["keys"].([]any)
	if status != 200 || len(list) != 1 {
		t.Fatalf("keys: %d %v", status, keys)
	}
	keyID := list[0].(map[string]any)["id"]
	status, page := w.env.REST(t, "GET", "/v1/usage?kind=topup", w.key, nil)
	rows, _ := page["rows"].([]any)
	if status != 200 || len(rows) != len(values) {
		t.Fatalf("GET /v1/usage?kind=topup: %d %v; want %d top-ups", status, page, len(values))
	}
	left := slices.Clone(values) // rows asked for in the same instant sit in any order
	for i, r := range rows {
		row := r.(map[string]any)
		j := slices.Index(left, fmt.Sprint(row["valueUsd"]))
		if j < 0 {
			t.Fatalf("top-up %d on the record: %v; want one of %v", i, row, left)
		}
		left = slices.Delete(left, j, j+1)
		tx, _ := row["txHash"].(string)
		if row["kind"] != "topup" || row["network"] != fmt.Sprintf("eip155:%d", anviltest.ChainID) ||
			!strings.HasPrefix(tx, "0x") || len(tx) != 66 || row["keyId"] != keyID || row["outcome"] != "succeeded" || fmt.Sprint(row["chargeMicro"]) != "0" {
			t.Fatalf("top-up %d on the record: %v; want kind topup, the network, a transaction, key %v, no charge", i, row, keyID)
		}
	}
	if status, page := w.env.REST(t, "GET", "/v1/usage?kind=call", w.key, nil); status != 200 || len(page["rows"].([]any)) != 0 {
		t.Fatalf("GET /v1/usage?kind=call: %d %v; want no calls", status, page)
	}
	spent, err := spending.New(w.env.App.Store).Spent(context.Background(), w.userID, "", []time.Time{{}})
	if err != nil || spent[0] != 0 {
		t.Fatalf("spent since the beginning %v %v; top-ups are not spending", spent, err)
	}
}
