package wallets

import (
	"context"
	"fmt"

	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
)

// Current is the id of the master key new seals use (the first configured).
func (s *Sealer) Current() string { return s.current }

// Reseal opens a key sealed under keyID and seals it again under the current master key, with
// the same aad.
func (s *Sealer) Reseal(sealed []byte, keyID string, aad []byte) ([]byte, string, error) {
	plain, err := s.Open(sealed, keyID, aad)
	if err != nil {
		return nil, "", err
	}
	defer clear(plain)
	out, id := s.Seal(plain, aad)
	return out, id, nil
}

// ResealReport is what a re-seal did: rows moved to the current master key, and rows left
// under another because their key is not configured (their ids, to look into).
type ResealReport struct {
	CurrentMasterKey    string   `json:"currentMasterKey"`
	WalletsResealed     int      `json:"walletsResealed"`
	ServiceKeysResealed int      `json:"serviceKeysResealed"`
	Unopenable          []string `json:"unopenable,omitempty"` // "wallet <id> (master key <id>): why"
	// Left are the rows still under an older master key when the run ended: 0 and 0 once the
	// old key may be dropped from SWITCHBOARD_MASTER_KEY.
	LeftWallets     int `json:"leftWallets"`
	LeftServiceKeys int `json:"leftServiceKeys"`
}

// ResealWallets seals every wallet key that is under an older master key again under the
// current one, batch rows at a time, each row on its own conditional update: stopped at any
// point (a crash, ctx), running it again carries on with the rows still under an older key,
// and a finished run leaves nothing for the next. done, when set, is told after each row.
func ResealWallets(ctx context.Context, st *store.Store, s *Sealer, batch int, rep *ResealReport, done func()) error {
	rep.CurrentMasterKey = s.current
	rows := accounts.New(st)
	after := ""
	for {
		ws, err := rows.WalletsSealedElsewhere(ctx, s.current, after, batch)
		if err != nil {
			return fmt.Errorf("list wallets to re-seal: %w", err)
		}
		if len(ws) == 0 {
			return nil
		}
		for _, w := range ws {
			after = w.ID
			sealed, to, err := s.Reseal(w.SealedKey, w.MasterKeyID, []byte(w.Address))
			if err != nil {
				rep.Unopenable = append(rep.Unopenable, fmt.Sprintf("wallet %s (master key %s): %v", w.ID, w.MasterKeyID, err))
				continue
			}
			changed, err := rows.ResealWallet(ctx, w.ID, w.MasterKeyID, sealed, to)
			if err != nil {
				return fmt.Errorf("re-seal wallet %s: %w", w.ID, err)
			}
			if changed {
				rep.WalletsResealed++
			}
			if done != nil {
				done()
			}
		}
	}
}
