package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LoadOrCreatePrivateKey reads a PEM (PKCS#8) Ed25519 private key from path, or, when the
// file does not exist, generates one and writes it with mode 0600. created reports the latter,
// so the caller can warn that production must supply its own key.
func LoadOrCreatePrivateKey(path string) (priv ed25519.PrivateKey, created bool, err error) {
	data, err := os.ReadFile(path)
	if err == nil {
		priv, err = ParsePrivateKeyPEM(data)
		if err != nil {
			return nil, false, fmt.Errorf("signing key %s: %w", path, err)
		}
		return priv, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read signing key: %w", err)
	}
	_, priv, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("generate signing key: %w", err)
	}
	pemBytes, err := MarshalPrivateKeyPEM(priv)
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("create key directory: %w", err)
	}
	// O_EXCL: two processes starting at once must not overwrite each other's key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("write signing key: %w", err)
	}
	if _, err := f.Write(pemBytes); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("write signing key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, false, fmt.Errorf("write signing key: %w", err)
	}
	return priv, true, nil
}

// MarshalPrivateKeyPEM encodes an Ed25519 private key as a PKCS#8 "PRIVATE KEY" PEM block.
func MarshalPrivateKeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("marshal signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes a PKCS#8 "PRIVATE KEY" PEM block holding an Ed25519 key.
func ParsePrivateKeyPEM(data []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New(`expected a PEM block of type "PRIVATE KEY" (PKCS#8)`)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, want Ed25519", key)
	}
	return priv, nil
}

// MarshalPublicKeyPEM encodes an Ed25519 public key as a SPKI "PUBLIC KEY" PEM block, the
// format served at /.well-known/service-public-key.
func MarshalPublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKeyPEM decodes a SPKI "PUBLIC KEY" PEM block holding an Ed25519 key.
func ParsePublicKeyPEM(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New(`expected a PEM block of type "PUBLIC KEY" (SPKI)`)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse SPKI: %w", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, want Ed25519", key)
	}
	return pub, nil
}
