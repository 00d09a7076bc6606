package app

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// secretsToCopy explains a replica that cannot open the database's service key: the key was
// sealed under another replica's master key, so this one was started without the first one's
// secrets. It says what to copy, and from where, rather than only which key id is missing.
func secretsToCopy(cfg Config, err error) error {
	var unknown *wallets.UnknownKeyError
	if !errors.As(err, &unknown) {
		return err
	}
	mine := "SWITCHBOARD_MASTER_KEY"
	if cfg.MasterKey == "" {
		mine = filepath.Join(cfg.DataDir, "master.key") + " (SWITCHBOARD_MASTER_KEY is empty, so this test-environment replica read or generated that file; production is always given it)"
	}
	return fmt.Errorf("%w: this database's service signing key is sealed under master key %s, which this replica does not hold; its master key comes from %s. "+
		"Every replica of one database needs the first replica's secrets: on the first replica, take the value of SWITCHBOARD_MASTER_KEY "+
		"(or, where that is empty, the file master.key in its SWITCHBOARD_DATA_DIR) and SWITCHBOARD_SERVER_SECRET (or server-secret.key beside it), "+
		"and set both, unchanged, on this replica. The signing key itself lives in the database and needs no copying (docs/operations.md, Running N replicas)",
		err, unknown.KeyID, mine)
}
