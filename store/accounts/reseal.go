package accounts

import (
	"context"

	"github.com/switchboard-hq/switchboard/store/dberr"
)

// WalletsSealedElsewhere returns up to limit wallets sealed under a master key other than
// current, ids after `after` in id order: the re-seal's next batch.
func (s *queries) WalletsSealedElsewhere(ctx context.Context, current, after string, limit int) ([]*Wallet, error) {
	var ws []*Wallet
	err := s.db().NewSelect().Model(&ws).Where("master_key_id <> ? AND id > ?", current, after).
		OrderExpr("id ASC").Limit(int64(limit)).Scan(ctx)
	return ws, dberr.Normalize(err)
}

// ResealWallet stores a wallet's key sealed again under master key `to`, if the row is still
// sealed under `from`: a concurrent re-seal of the same row changes it once (false for the
// other).
func (s *queries) ResealWallet(ctx context.Context, id, from string, sealed []byte, to string) (bool, error) {
	res, err := s.db().NewUpdate().Model((*Wallet)(nil)).Set("sealed_key = ?", sealed).Set("master_key_id = ?", to).
		Where("id = ? AND master_key_id = ?", id, from).Exec(ctx)
	if err != nil {
		return false, dberr.Normalize(err)
	}
	n, err := res.RowsAffected()
	return n == 1, dberr.Normalize(err)
}

// SealedElsewhere counts the wallets and service keys still sealed under a master key other
// than current.
func (s *queries) SealedElsewhere(ctx context.Context, current string) (wallets, serviceKeys int, err error) {
	w, err := s.db().NewSelect().Model((*Wallet)(nil)).Where("master_key_id <> ?", current).Count(ctx)
	if err != nil {
		return 0, 0, dberr.Normalize(err)
	}
	k, err := s.db().NewSelect().Table("service_keys").Where("master_key_id <> ?", current).Count(ctx)
	return int(w), int(k), dberr.Normalize(err)
}
