// Package contracts holds the compiled flat-fee payer and test stablecoin (build/*.json,
// compiled from the .sol sources beside them by build.mjs with the pinned solc; CI recompiles
// and fails on a difference).
package contracts

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
)

//go:embed build/*.json
var builds embed.FS

// Contract is a compiled contract.
type Contract struct {
	ABI      ABI
	Bytecode []byte
}

func load(name string) Contract {
	raw, err := builds.ReadFile("build/" + name + ".json")
	if err != nil {
		panic(err)
	}
	var b struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode string          `json:"bytecode"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		panic(fmt.Sprintf("contracts/build/%s.json: %v", name, err))
	}
	parsed, err := parseABI(b.ABI)
	if err != nil {
		panic(fmt.Sprintf("contracts/build/%s.json: %v", name, err))
	}
	return Contract{ABI: parsed, Bytecode: common.FromHex(b.Bytecode)}
}

// The compiled contracts.
var (
	FlatFeePayer = load("FlatFeePayer")
	TestUSDC     = load("TestUSDC")
)
