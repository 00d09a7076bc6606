package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
)

// runVerifyReceipt checks a signed receipt read from stdin (an invoke answer, or a
// {receipt, signature} object) against the service key of a deployment (its
// /.well-known/service-public-key) or a PEM file. It exits non-zero when the receipt does not
// verify.
func runVerifyReceipt(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("switchboard verify-receipt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base-url", "", "the deployment whose service key signed it (fetches /.well-known/service-public-key)")
	keyFile := fs.String("key-file", "", "a PEM public key instead of -base-url")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var pem []byte
	var keys []ed25519.PublicKey
	switch {
	case *keyFile != "":
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return err
		}
		pem = b
	case *base != "":
		// The key set first: it still lists the previous key of a rotation, which signed older receipts.
		if set, err := signing.NewURLKeySource(*base).KeySet(ctx); err == nil {
			for _, e := range set.Keys {
				if k, err := signing.ParsePublicKeyPEM([]byte(e.PublicKeyPEM)); err == nil {
					keys = append(keys, k)
				}
			}
			if len(keys) > 0 {
				break
			}
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*base, "/")+"/.well-known/service-public-key", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("fetch the service key: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("fetch the service key: HTTP %d", resp.StatusCode)
		}
		if pem, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err != nil {
			return err
		}
	default:
		return errors.New("give -base-url (the deployment) or -key-file (its PEM public key)")
	}
	if len(keys) == 0 {
		pub, err := signing.ParsePublicKeyPEM(pem)
		if err != nil {
			return fmt.Errorf("the service key: %w", err)
		}
		keys = append(keys, pub)
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, 8<<20))
	if err != nil {
		return err
	}
	var sr signing.SignedReceipt
	// An invoke answer carries {"receipt": {"receipt": ..., "signature": ...}}.
	var answer struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("stdin is not JSON: %w", err)
	}
	if json.Unmarshal(answer.Receipt, &sr) != nil || sr.Signature == "" {
		if err := json.Unmarshal(raw, &sr); err != nil || sr.Signature == "" {
			return errors.New("stdin holds no signed receipt: give an invoke answer or {receipt, signature}")
		}
	}
	if err := signing.VerifyReceipt(sr, keys...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "OK: receipt of %s (%s) signed by service key %s; total %d micro-USD; result sha256 %s\n",
		sr.Receipt.RequestID, sr.Receipt.Handle, sr.Receipt.KeyID, sr.Receipt.Charges.TotalMicro, sr.Receipt.ResultSHA256)
	return nil
}
