package wallets

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/google/uuid"
	"github.com/mr-tron/base58"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/store/sessions"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/webhooks"
)

// Self-custody: a signed-in human exports the private keys of the account's embedded wallets,
// after a code e-mailed to the account's address just now (a stolen session alone cannot).
// Each export is recorded as an account event, in the transaction that reads the keys, which
// every other session shows at its next page load (sessions.Service.Notice).

// Exported is one wallet's private key in the form wallet apps import.
type Exported struct {
	Family  string `json:"family" jsonschema:"enum=evm,enum=svm"`
	Address string `json:"address"`
	// Key: EVM, the 32-byte secp256k1 key as 64 hex digits (MetaMask, Rabby, cast wallet);
	// Solana, the 64-byte keypair (seed then public key) in base58 (Phantom, Solflare,
	// Backpack).
	Key string `json:"key"`
}

// ConfirmCode consumes an e-mailed code for email and returns the account it proves
// (onboarding.Service.SignIn).
type ConfirmCode func(ctx context.Context, email, code, clientAddr string) (accountID string, err error)

// Exporter runs wallet_export.
type Exporter struct {
	accounts accounts.Accounts
	sessions sessions.Sessions
	sealer   *Sealer
	confirm  ConfirmCode
	now      func() time.Time
	log      *slog.Logger
}

// NewExporter builds the export; confirm checks the code the export asks for.
func NewExporter(d service.Deps, sealer *Sealer, confirm ConfirmCode) *Exporter {
	d = d.WithDefaults()
	return &Exporter{accounts: accounts.New(d.Store), sessions: sessions.New(d.Store), sealer: sealer, confirm: confirm, now: d.Now, log: d.Log}
}

// ExportInput is the code e-mailed for the export.
type ExportInput struct {
	Code string `json:"code" jsonschema:"maxLength=64" jsonschema_description:"the code e-mailed to the account's address for this export"`
}

// ExportOutput is the keys, shown once.
type ExportOutput struct {
	Keys []Exported `json:"keys"`
}

// Tools returns wallet_export, for the portal's signed-in human only.
func (x *Exporter) Tools() []*tools.Tool {
	return []*tools.Tool{tools.New(tools.Def{
		Name:  "wallet_export",
		Title: "Export wallet keys",
		Description: "Export the private keys of the account's embedded wallets into self-custody, with a code just e-mailed to the account's address. " +
			"Portal only: the export is recorded and every other session of the account is told of it.",
		Access:      tools.SessionOnly,
		Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)},
	}, x.export)}
}

func (x *Exporter) export(ctx context.Context, c *tools.Caller, in ExportInput) (ExportOutput, error) {
	p := c.Principal
	acct, err := x.accounts.ByID(ctx, p.AccountID)
	if err != nil {
		return ExportOutput{}, err
	}
	accountID, err := x.confirm(ctx, acct.Email, strings.TrimSpace(in.Code), c.ClientAddr)
	if err != nil {
		return ExportOutput{}, err
	}
	if accountID != p.AccountID {
		return ExportOutput{}, tools.Errorf(tools.CodeForbidden, "that code is for another account; request a new code here")
	}
	var out ExportOutput
	// Recorded in the transaction that reads the keys: no export goes unrecorded, and an
	// export that fails records nothing.
	// The owner's backend hears of every export too (wallet.exported), from the same transaction.
	err = x.sessions.ExportWallets(ctx, p.AccountID, func(ws []*accounts.Wallet) (*sessions.AccountEvent, []*store.WebhookEvent, error) {
		keys, err := x.open(ws)
		if err != nil {
			return nil, nil, err
		}
		addrs := make([]string, len(keys))
		for i, k := range keys {
			addrs[i] = k.Address
		}
		out.Keys = keys
		at := x.now().UTC()
		wh, err := webhooks.New(webhooks.WalletExported, p.AccountID, at, webhooks.WalletExportedData{Addresses: addrs, ClientAddr: c.ClientAddr})
		if err != nil {
			return nil, nil, err
		}
		return &sessions.AccountEvent{ID: uuid.NewString(), AccountID: p.AccountID, Kind: sessions.EventWalletExported, SessionID: p.SessionID,
			ClientAddr: c.ClientAddr, Detail: strings.Join(addrs, ","), CreatedAt: at}, []*store.WebhookEvent{wh}, nil
	})
	if err != nil {
		return ExportOutput{}, err
	}
	x.log.InfoContext(ctx, "wallet keys exported", "account", p.AccountID, "session", p.SessionID) // never the keys
	return out, nil
}

// open unseals every wallet for its owner to take into self-custody. It checks that each key
// still yields its address, so what is shown is what holds the funds.
func (x *Exporter) open(ws []*accounts.Wallet) ([]Exported, error) {
	out := make([]Exported, 0, len(ws))
	for _, w := range ws {
		key, err := x.sealer.Open(w.SealedKey, w.MasterKeyID, []byte(w.Address))
		if err != nil {
			return nil, fmt.Errorf("open the %s wallet %s: %w", w.Family, w.Address, err)
		}
		ex := Exported{Family: w.Family, Address: w.Address}
		switch w.Family {
		case accounts.FamilyEVM:
			priv := secp256k1.PrivKeyFromBytes(key)
			if ChecksumAddress(keccak(priv.PubKey().SerializeUncompressed()[1:])[12:]) != ChecksumAddress(mustHex(w.Address)) {
				return nil, fmt.Errorf("the EVM key of %s does not yield its address", w.Address)
			}
			ex.Key = hex.EncodeToString(key)
		default:
			if len(key) != ed25519.SeedSize {
				return nil, fmt.Errorf("the Solana key of %s is %d bytes, want a %d-byte seed", w.Address, len(key), ed25519.SeedSize)
			}
			pair := ed25519.NewKeyFromSeed(key)
			if base58.Encode(pair.Public().(ed25519.PublicKey)) != w.Address {
				return nil, fmt.Errorf("the Solana key of %s does not yield its address", w.Address)
			}
			ex.Key = base58.Encode(pair)
		}
		out = append(out, ex)
	}
	return out, nil
}
