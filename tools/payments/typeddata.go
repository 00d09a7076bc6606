package payments

import "github.com/switchboard-hq/switchboard/contracts"

// TypedData is an EIP-712 message in the shape wallets and viem's signTypedData take as they
// are: the domain's chainId a number, no empty fields.
type TypedData struct {
	Types       map[string][]TypedField `json:"types"`
	PrimaryType string                  `json:"primaryType"`
	Domain      TypedDomain             `json:"domain"`
	Message     map[string]any          `json:"message"`
}

// TypedField is one field of an EIP-712 type.
type TypedField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// TypedDomain is the token's EIP-712 domain.
type TypedDomain struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	ChainID           int64  `json:"chainId"`
	VerifyingContract string `json:"verifyingContract"`
}

func typedDataOf(td contracts.TypedMessage) TypedData {
	out := TypedData{Types: map[string][]TypedField{}, PrimaryType: td.PrimaryType, Message: td.Message,
		Domain: TypedDomain{Name: td.Domain.Name, Version: td.Domain.Version, ChainID: td.Domain.ChainID, VerifyingContract: td.Domain.VerifyingContract}}
	for name, fields := range td.Types {
		for _, f := range fields {
			out.Types[name] = append(out.Types[name], TypedField{Name: f.Name, Type: f.Type})
		}
	}
	return out
}

func contractsNonce(cfg Config, requestID string) []byte {
	n := contracts.Nonce(cfg.ChainID, cfg.Payer, requestID)
	return n[:]
}
