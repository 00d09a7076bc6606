package tokens

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/connected"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// ConnectedWallet is a watch-only wallet as the tools show it.
type ConnectedWallet struct {
	Address   string    `json:"address"`
	Family    string    `json:"family" jsonschema:"enum=evm,enum=svm" jsonschema_description:"evm (the 7 EVM chains) or svm (Solana)"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
}

// ConnectInput is connected_wallet_add's input.
type ConnectInput struct {
	Address string `json:"address" jsonschema:"minLength=32,maxLength=64" jsonschema_description:"EVM address (0x...) or Solana address (base58)"`
	Label   string `json:"label,omitempty" jsonschema:"maxLength=64" jsonschema_description:"optional name for the wallet"`
}

// ConnectOutput is connected_wallet_add's answer.
type ConnectOutput struct {
	Wallet ConnectedWallet `json:"wallet"`
	Added  bool            `json:"added" jsonschema_description:"false when the address was already connected"`
}

// ListConnectedInput is connected_wallet_list's (empty) input.
type ListConnectedInput struct{}

// ListConnectedOutput is connected_wallet_list's answer.
type ListConnectedOutput struct {
	Wallets []ConnectedWallet `json:"wallets"`
	Max     int               `json:"max" jsonschema_description:"how many wallets an account may connect"`
}

// RemoveConnectedInput is connected_wallet_remove's input.
type RemoveConnectedInput struct {
	Address string `json:"address" jsonschema:"minLength=32,maxLength=64"`
}

// RemoveConnectedOutput is connected_wallet_remove's answer.
type RemoveConnectedOutput struct {
	Removed ConnectedWallet `json:"removed"`
}

func walletOut(w *connected.Wallet) ConnectedWallet {
	return ConnectedWallet{Address: w.Address, Family: w.Family, Label: w.Label, CreatedAt: w.CreatedAt.UTC()}
}

// parseWallet reads an address as an EVM or Solana wallet: family, display form, key.
func parseWallet(address string) (family, display, key string, err error) {
	a := strings.TrimSpace(address)
	switch {
	case IsEVMAddress(a):
		if !wallets.ValidEVMAddress(a) {
			return "", "", "", tools.Errorf(tools.CodeBadInput, "%s fails its EIP-55 checksum; check the address, or send it all lowercase", a)
		}
		c := chainOf("ethereum")
		return FamilyEVM, DisplayAddress(c, a), AddressKey(c, a), nil
	case wallets.ValidSolanaAddress(a):
		return FamilySVM, a, a, nil
	}
	return "", "", "", tools.Errorf(tools.CodeBadInput, "%q is neither an EVM address (0x and 40 hex digits) nor a Solana address (base58, 32 bytes)", a)
}

func (s *Service) connectTool(ctx context.Context, c *tools.Caller, in ConnectInput) (ConnectOutput, error) {
	family, display, key, err := parseWallet(in.Address)
	if err != nil {
		return ConnectOutput{}, err
	}
	primary, err := s.accounts.Wallets(ctx, c.Principal.AccountID)
	if err != nil {
		return ConnectOutput{}, err
	}
	for _, w := range primary {
		if w.Family == family && strings.EqualFold(w.Address, display) {
			return ConnectOutput{}, tools.Errorf(tools.CodeBadInput, "%s is already this account's primary %s wallet; get_balances covers it", display, family)
		}
	}
	if existing, err := s.connected.ConnectedWalletAt(ctx, c.Principal.AccountID, key); err == nil {
		return ConnectOutput{Wallet: walletOut(existing)}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return ConnectOutput{}, err
	}
	w := &connected.Wallet{ID: uuid.NewString(), AccountID: c.Principal.AccountID, Family: family, Address: display, AddressKey: key,
		Label: strings.TrimSpace(in.Label), CreatedAt: s.now()}
	switch err := s.connected.AddConnectedWallet(ctx, w, s.maxConnected); {
	case errors.Is(err, connected.ErrLimitReached):
		return ConnectOutput{}, tools.Errorf(tools.CodeConflict, "this account already has %d connected wallets, the most allowed; remove one with connected_wallet_remove first", s.maxConnected)
	case errors.Is(err, store.ErrConflict):
		existing, err := s.connected.ConnectedWalletAt(ctx, c.Principal.AccountID, key) // connected concurrently
		if err != nil {
			return ConnectOutput{}, err
		}
		return ConnectOutput{Wallet: walletOut(existing)}, nil
	case err != nil:
		return ConnectOutput{}, err
	}
	return ConnectOutput{Wallet: walletOut(w), Added: true}, nil
}

func (s *Service) listConnectedTool(ctx context.Context, c *tools.Caller, _ ListConnectedInput) (ListConnectedOutput, error) {
	ws, err := s.connected.ConnectedWallets(ctx, c.Principal.AccountID)
	if err != nil {
		return ListConnectedOutput{}, err
	}
	out := ListConnectedOutput{Wallets: make([]ConnectedWallet, 0, len(ws)), Max: s.maxConnected}
	for _, w := range ws {
		out.Wallets = append(out.Wallets, walletOut(w))
	}
	return out, nil
}

func (s *Service) removeConnectedTool(ctx context.Context, c *tools.Caller, in RemoveConnectedInput) (RemoveConnectedOutput, error) {
	_, display, key, err := parseWallet(in.Address)
	if err != nil {
		return RemoveConnectedOutput{}, err
	}
	w, err := s.connected.RemoveConnectedWallet(ctx, c.Principal.AccountID, key)
	if errors.Is(err, store.ErrNotFound) {
		return RemoveConnectedOutput{}, tools.Errorf(tools.CodeNotFound, "%s is not a connected wallet of this account; connected_wallet_list shows them", display)
	}
	if err != nil {
		return RemoveConnectedOutput{}, err
	}
	return RemoveConnectedOutput{Removed: walletOut(w)}, nil
}
