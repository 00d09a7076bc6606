package app

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/tools/keyring"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// openKeys applies the migrations, then loads the process's secrets and opens the service
// key ring: the service key lives in the database (rotations, replicas), the key file seeds it.
func openKeys(ctx context.Context, cfg Config, d service.Deps) (secrets, *keyring.Ring, error) {
	applied, err := d.Store.Migrate(ctx)
	if err != nil {
		return secrets{}, nil, err
	}
	if len(applied) > 0 {
		d.Log.Info("migrations applied", "migrations", applied)
	}
	sec, err := loadSecrets(cfg, d.Log)
	if err != nil {
		return secrets{}, nil, err
	}
	ring, err := keyring.Open(ctx, keyring.Config{Bootstrap: sec.signingKey}, d, sec.sealer)
	if err != nil {
		return secrets{}, nil, secretsToCopy(cfg, err)
	}
	return sec, ring, nil
}

// secrets are the keys a process needs from its configuration or data directory.
type secrets struct {
	signingKey   ed25519.PrivateKey
	serverSecret []byte // never rotates: e-mail code hashes, pseudonyms and form tokens derive from it
	sealer       *wallets.Sealer
}

// loadSecrets reads (or, in the test environment, creates) the signing key, the wallet master
// keys and the server secret. Production supplies all three (Config.CheckSecrets) and never
// writes a secret file.
func loadSecrets(cfg Config, log *slog.Logger) (secrets, error) {
	if err := cfg.CheckSecrets(); err != nil {
		return secrets{}, err
	}
	signingKey, err := loadSigningKey(cfg, log)
	if err != nil {
		return secrets{}, err
	}
	masterKeys, err := loadKeys("SWITCHBOARD_MASTER_KEY", cfg.MasterKey, filepath.Join(cfg.DataDir, "master.key"), "wallet master key", log)
	if err != nil {
		return secrets{}, err
	}
	// The e-mail code and pseudonym secrets derive from a secret that never rotates, so
	// rotating the master key changes neither the userId partners see nor live codes.
	serverSecret, err := loadKeys("SWITCHBOARD_SERVER_SECRET", cfg.ServerSecret, filepath.Join(cfg.DataDir, "server-secret.key"), "server secret", log)
	if err != nil {
		return secrets{}, err
	}
	if len(serverSecret) != 1 || len(serverSecret[0]) != 32 {
		return secrets{}, errors.New("SWITCHBOARD_SERVER_SECRET: want exactly one base64 32-byte key")
	}
	sealer, err := wallets.NewSealer(masterKeys...)
	if err != nil {
		return secrets{}, fmt.Errorf("master key: %w", err)
	}
	return secrets{signingKey: signingKey, serverSecret: serverSecret[0], sealer: sealer}, nil
}

func loadSigningKey(cfg Config, log *slog.Logger) (ed25519.PrivateKey, error) {
	path := cfg.SigningKeyFile
	if cfg.Env == "production" { // the file must be there: production generates no key
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SWITCHBOARD_SIGNING_KEY_FILE: %w (production never generates its signing key: make it with `openssl genpkey -algorithm ed25519 -out signing-key.pem`)", err)
		}
		key, err := signing.ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, fmt.Errorf("SWITCHBOARD_SIGNING_KEY_FILE %s: %w", path, err)
		}
		return key, nil
	}
	if path == "" {
		path = filepath.Join(cfg.DataDir, "signing-key.pem")
	}
	key, created, err := signing.LoadOrCreatePrivateKey(path)
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("generated a new Ed25519 signing key for the test environment; production refuses to start without its own (SWITCHBOARD_SIGNING_KEY_FILE)", "path", path)
	}
	return key, nil
}

// loadKeys returns the base64 32-byte keys of a setting (comma-separated, current first) or,
// when it is empty, of a file in the data dir, generating the file (0600) on first start.
func loadKeys(env, value, path, what string, log *slog.Logger) ([][]byte, error) {
	if value != "" {
		keys, err := wallets.ParseMasterKeys(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("%s holds no key", env)
		}
		return keys, nil
	}
	data, err := os.ReadFile(path)
	if err == nil {
		return wallets.ParseMasterKeys(strings.TrimSpace(string(data)))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", what, err)
	}
	_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if cerr := f.Close(); werr != nil || cerr != nil {
		return nil, fmt.Errorf("write %s: %w", what, errors.Join(werr, cerr))
	}
	log.Warn("generated a new "+what+" for the test environment; production refuses to start without its own ("+env+")", "path", path)
	return [][]byte{key}, nil
}

// derive keys a purpose-specific secret from the server secret.
func derive(serverSecret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, serverSecret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
