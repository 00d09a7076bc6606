// Package keyring rotates the service's Ed25519 signing key without breaking partners that
// cache it for an hour: the next key is published (in the key set at
// /.well-known/service-keys) before anything is signed with it; signing switches only after
// more than a cache lifetime; the previous key stays published to verify receipts it signed.
// Keys live in the database (private halves sealed with the master key), so every replica
// signs with the same key and follows a rotation within a refresh.
package keyring

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/servicekeys"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/service"
	"github.com/switchboard-hq/switchboard/tools/wallets"
)

// Overlap is how long a next key is published before signing switches to it: partners cache
// keys for signing.KeyCacheTTL (1 hour), plus a margin.
const Overlap = signing.KeyCacheTTL + 5*time.Minute

// Ring is the service's keys and the signer that uses the current one.
type Ring struct {
	store  servicekeys.ServiceKeys
	sealer *wallets.Sealer
	signer *signing.Signer
	now    func() time.Time

	mu      sync.RWMutex
	keys    []*servicekeys.ServiceKey
	current string // kid the signer holds
}

// Config is where the ring starts.
type Config struct {
	// Bootstrap is the key file's key, registered as current when the database has none.
	Bootstrap ed25519.PrivateKey
}

// Open loads the keys from d's store, registering cfg.Bootstrap as current when there are
// none, and returns the ring and a signer on the current key; sealer seals the private halves.
func Open(ctx context.Context, cfg Config, d service.Deps, sealer *wallets.Sealer) (*Ring, error) {
	d = d.WithDefaults()
	st, bootstrap := servicekeys.New(d.Store), cfg.Bootstrap
	r := &Ring{store: st, sealer: sealer, now: d.Now}
	keys, err := st.ServiceKeys(ctx)
	if err != nil {
		return nil, err
	}
	if current(keys) == nil {
		if err := r.insert(ctx, bootstrap, servicekeys.KeyCurrent); err != nil && !errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		if keys, err = st.ServiceKeys(ctx); err != nil {
			return nil, err
		}
	}
	c := current(keys)
	if c == nil {
		return nil, errors.New("keyring: no current service key")
	}
	priv, err := r.open(c)
	if err != nil {
		return nil, err
	}
	r.signer, r.keys, r.current = signing.NewSigner(priv), keys, c.KID
	return r, nil
}

func current(keys []*servicekeys.ServiceKey) *servicekeys.ServiceKey {
	for _, k := range keys {
		if k.Status == servicekeys.KeyCurrent {
			return k
		}
	}
	return nil
}

func (r *Ring) insert(ctx context.Context, priv ed25519.PrivateKey, status string) error {
	pub := priv.Public().(ed25519.PublicKey)
	pem, err := signing.MarshalPublicKeyPEM(pub)
	if err != nil {
		return err
	}
	kid := signing.KeyID(pub)
	sealed, mk := r.sealer.Seal(priv, []byte("service key "+kid))
	return r.store.InsertServiceKey(ctx, &servicekeys.ServiceKey{KID: kid, Status: status, SealedPrivate: sealed, MasterKeyID: mk,
		PublicPEM: string(pem), CreatedAt: r.now().UTC()})
}

func (r *Ring) open(k *servicekeys.ServiceKey) (ed25519.PrivateKey, error) {
	raw, err := r.sealer.Open(k.SealedPrivate, k.MasterKeyID, []byte("service key "+k.KID))
	if err != nil {
		return nil, fmt.Errorf("keyring: unseal %s: %w", k.KID, err)
	}
	if len(raw) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("keyring: key %s has %d bytes", k.KID, len(raw))
	}
	return ed25519.PrivateKey(raw), nil
}

// Signer signs with the current key, following rotations (Refresh).
func (r *Ring) Signer() *signing.Signer { return r.signer }

// Refresh reloads the keys, switching the signer when another replica (or the operator)
// promoted the next key.
func (r *Ring) Refresh(ctx context.Context) error {
	keys, err := r.store.ServiceKeys(ctx)
	if err != nil {
		return err
	}
	c := current(keys)
	if c == nil {
		return errors.New("keyring: no current service key")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.KID != r.current {
		priv, err := r.open(c)
		if err != nil {
			return err
		}
		r.signer.SetKey(priv)
		r.current = c.KID
	}
	r.keys = keys
	return nil
}

// CurrentPEM is the public key signing now: the body of /.well-known/service-public-key.
func (r *Ring) CurrentPEM() []byte { return r.signer.PublicKeyPEM() }

// KeySet is the published set: current, next (signing after the rotation), previous (receipts).
func (r *Ring) KeySet() signing.KeySet {
	r.mu.RLock()
	defer r.mu.RUnlock()
	set := signing.KeySet{Keys: []signing.KeySetEntry{}}
	for _, k := range r.keys {
		set.Keys = append(set.Keys, signing.KeySetEntry{KeyID: k.KID, Status: k.Status, PublicKeyPEM: k.PublicPEM})
	}
	return set
}

// Step is what rotate-key did.
type Step struct {
	Action      string    `json:"action"` // "published next key", "switched signing", "retired"
	Current     string    `json:"current"`
	Next        string    `json:"next,omitempty"`
	Previous    string    `json:"previous,omitempty"`
	SwitchAfter time.Time `json:"switchAfter,omitzero"`
}

// Rotate advances a rotation by one step: with no next key, it creates and publishes one; with
// a next key published longer than Overlap ago, it switches signing to it (the current key
// becomes previous); earlier, it refuses and says when.
func (r *Ring) Rotate(ctx context.Context) (Step, error) {
	if err := r.Refresh(ctx); err != nil {
		return Step{}, err
	}
	r.mu.RLock()
	var next, cur *servicekeys.ServiceKey
	for _, k := range r.keys {
		switch k.Status {
		case servicekeys.KeyNext:
			next = k
		case servicekeys.KeyCurrent:
			cur = k
		}
	}
	r.mu.RUnlock()
	now := r.now().UTC()
	if next == nil {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return Step{}, err
		}
		if err := r.insert(ctx, priv, servicekeys.KeyNext); err != nil {
			return Step{}, err
		}
		kid := signing.KeyID(priv.Public().(ed25519.PublicKey))
		return Step{Action: "published next key", Current: cur.KID, Next: kid, SwitchAfter: now.Add(Overlap)}, r.Refresh(ctx)
	}
	if switchAt := next.CreatedAt.Add(Overlap); now.Before(switchAt) {
		return Step{}, tools.Errorf(tools.CodeConflict, "the next key %s was published at %s; partners cache keys for an hour, so signing switches after %s: run rotate-key again then",
			next.KID, next.CreatedAt.UTC().Format(time.RFC3339), switchAt.Format(time.RFC3339))
	}
	if err := r.store.PromoteServiceKey(ctx, next.KID, now); err != nil {
		return Step{}, err
	}
	return Step{Action: "switched signing", Current: next.KID, Previous: cur.KID}, r.Refresh(ctx)
}

// Retire stops publishing the previous key (receipts it signed no longer verify by key set).
func (r *Ring) Retire(ctx context.Context) (int, error) {
	n, err := r.store.RetireServiceKeys(ctx)
	if err != nil {
		return 0, err
	}
	return n, r.Refresh(ctx)
}

// RunRefresh refreshes every interval until ctx ends.
func (r *Ring) RunRefresh(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
		}
	}
}

// Reseal seals every service key (retired ones too) that is under an older master key again
// under the current one, each row on its own conditional update (see wallets.ResealWallets).
func (r *Ring) Reseal(ctx context.Context, rep *wallets.ResealReport) error {
	ks, err := r.store.ServiceKeysSealedElsewhere(ctx, r.sealer.Current())
	if err != nil {
		return fmt.Errorf("list service keys to re-seal: %w", err)
	}
	for _, k := range ks {
		sealed, to, err := r.sealer.Reseal(k.SealedPrivate, k.MasterKeyID, []byte("service key "+k.KID))
		if err != nil {
			rep.Unopenable = append(rep.Unopenable, fmt.Sprintf("service key %s (master key %s): %v", k.KID, k.MasterKeyID, err))
			continue
		}
		changed, err := r.store.ResealServiceKey(ctx, k.KID, k.MasterKeyID, sealed, to)
		if err != nil {
			return fmt.Errorf("re-seal service key %s: %w", k.KID, err)
		}
		if changed {
			rep.ServiceKeysResealed++
		}
	}
	return nil
}
