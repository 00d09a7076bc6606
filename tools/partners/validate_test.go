package partners_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
)

func dec(s string) partners.Decimal { return partners.Decimal{Decimal: decimal.RequireFromString(s)} }

func TestValidator(t *testing.T) {
	v := partners.NewValidator(&outbound.Guard{AllowLocal: true})
	base := func() partners.IntentInput { return input("@valid-one", "https://partner.example/tool") }
	cases := []struct {
		name  string
		edit  func(in *partners.IntentInput)
		field string // "" = valid
		msg   string
	}{
		{"minimal", func(in *partners.IntentInput) {}, "", ""},
		{"handle without @", func(in *partners.IntentInput) { in.PublicIdentifier = "abc" }, "publicIdentifier", "starts with @"},
		{"handle too short", func(in *partners.IntentInput) { in.PublicIdentifier = "@ab" }, "publicIdentifier", "3 to 32"},
		{"handle too long", func(in *partners.IntentInput) { in.PublicIdentifier = "@" + strings.Repeat("a", 33) }, "publicIdentifier", "3 to 32"},
		{"handle uppercase", func(in *partners.IntentInput) { in.PublicIdentifier = "@Price" }, "publicIdentifier", "use @price"},
		{"handle bad char", func(in *partners.IntentInput) { in.PublicIdentifier = "@pri.ce" }, "publicIdentifier", "a-z"},
		{"handle reserved", func(in *partners.IntentInput) { in.PublicIdentifier = "@switchboard" }, "publicIdentifier", "reserved"},
		{"handle 32 chars", func(in *partners.IntentInput) { in.PublicIdentifier = "@" + strings.Repeat("a_-9", 8) }, "", ""},
		{"empty name", func(in *partners.IntentInput) { in.Name = "  " }, "name", "empty"},
		{"long name", func(in *partners.IntentInput) { in.Name = strings.Repeat("n", 81) }, "name", "80"},
		{"name with newline", func(in *partners.IntentInput) { in.Name = "a\nb" }, "name", "control"},
		{"empty description", func(in *partners.IntentInput) { in.Description = "" }, "description", "empty"},
		{"description with newlines", func(in *partners.IntentInput) { in.Description = "line one\nline two" }, "", ""},
		{"unknown category", func(in *partners.IntentInput) { in.Category = "LEND" }, "category", "write categories"},
		{"unknown capability", func(in *partners.IntentInput) { in.Capabilities = []string{"TELEPORTS"} }, "capabilities", "unknown capability"},
		{"duplicate capability", func(in *partners.IntentInput) { in.Capabilities = []string{"RETURNS_EMBED", "RETURNS_EMBED"} }, "capabilities", "twice"},
		{"funds with idempotent category", func(in *partners.IntentInput) { in.Capabilities = []string{"MUTATES_USER_FUNDS"} }, "capabilities", "needs a write category"},
		{"signature with idempotent category", func(in *partners.IntentInput) { in.Capabilities = []string{"REQUIRES_USER_SIGNATURE"} }, "capabilities", "needs a write category"},
		{"funds with write category", func(in *partners.IntentInput) {
			in.Capabilities = []string{"MUTATES_USER_FUNDS"}
			in.Category = "EXECUTE"
		}, "", ""},
		{"swap without a marked token", func(in *partners.IntentInput) { in.Category = "SWAP" }, "parametersSchema", `"x-token": true`},
		{"send without a marked token", func(in *partners.IntentInput) {
			in.Category = "SEND"
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","properties":{"to":{"type":"string"},"amount":{"type":"string"}}}`)
		}, "parametersSchema", "mark its token arguments"},
		{"swap with a marked token", func(in *partners.IntentInput) {
			in.Category = "SWAP"
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","properties":{"token":{"type":"string","x-token":true},"chain":{"type":"string"}},"required":["token"]}`)
		}, "", ""},
		{"unknown binding", func(in *partners.IntentInput) { in.BindingType = "GRPC" }, "bindingType", "REST or MCP_HTTP"},
		{"timeout too low", func(in *partners.IntentInput) { in.TimeoutMs = ptr(999) }, "timeoutMs", "between 1000 and 120000"},
		{"timeout too high", func(in *partners.IntentInput) { in.TimeoutMs = ptr(120001) }, "timeoutMs", "between"},
		{"endpoint not a URL", func(in *partners.IntentInput) { in.ToolEndpoint = "partner.example" }, "toolEndpoint", "scheme"},
		{"endpoint with credentials", func(in *partners.IntentInput) { in.ToolEndpoint = "https://u:p@partner.example/" }, "toolEndpoint", "user info"},
		{"params not object type", func(in *partners.IntentInput) { in.ParametersSchema = partners.SchemaDoc(`{"type":"string"}`) }, "parametersSchema", `"type": "object"`},
		{"params not a schema", func(in *partners.IntentInput) {
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","properties":{"a":{"type":"strung"}}}`)
		}, "parametersSchema", "not a valid JSON Schema"},
		{"params external ref", func(in *partners.IntentInput) {
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)
		}, "parametersSchema", "external $ref"},
		{"params remote ref", func(in *partners.IntentInput) {
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","$ref":"https://example.com/s.json"}`)
		}, "parametersSchema", "external $ref"},
		{"params local ref", func(in *partners.IntentInput) {
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","$defs":{"t":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/t"}}}`)
		}, "", ""},
		{"params too big", func(in *partners.IntentInput) {
			in.ParametersSchema = partners.SchemaDoc(`{"type":"object","description":"` + strings.Repeat("x", 70000) + `"}`)
		}, "parametersSchema", "bytes"},
		{"output schema array", func(in *partners.IntentInput) { in.OutputSchema = partners.SchemaDoc(`[1]`) }, "outputSchema", "JSON Schema object"},
		{"output schema any type", func(in *partners.IntentInput) { in.OutputSchema = partners.SchemaDoc(`{"type":"array"}`) }, "", ""},
		{"fee zero", func(in *partners.IntentInput) { in.FeeRate = dec("0") }, "", ""},
		{"fee negative", func(in *partners.IntentInput) { in.FeeRate = dec("-1") }, "feeRate", "0 or more"},
		{"fee too precise", func(in *partners.IntentInput) {
			in.FeeRate = dec("0.0000001")
			in.PayoutAddresses = map[string]string{"evm": "0x52908400098527886e0f7030069857d2e4169ee7"}
		}, "feeRate", "6 decimal places"},
		{"fee bps fraction", func(in *partners.IntentInput) {
			in.FeeRate, in.FeeRateUnit = dec("2.5"), "bps"
			in.PayoutAddresses = map[string]string{"evm": "0x52908400098527886e0f7030069857d2e4169ee7"}
		}, "feeRate", "whole number"},
		{"unknown fee unit", func(in *partners.IntentInput) { in.FeeRateUnit = "eur_per_call" }, "feeRateUnit", "one of"},
		{"priced without payout", func(in *partners.IntentInput) { in.FeeRate = dec("0.01") }, "payoutAddresses", "at least one"},
		{"flat fee without evm", func(in *partners.IntentInput) {
			in.FeeRate, in.FeeRateUnit = dec("0.5"), "flat_usdc"
			in.PayoutAddresses = map[string]string{"svm": "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"}
		}, "payoutAddresses", "EVM chain"},
		{"flat fee stablecoin", func(in *partners.IntentInput) {
			in.FeeRate, in.FeeRateUnit = dec("0.5"), "flat_stablecoin"
			in.PayoutAddresses = map[string]string{"evm:84532": "0x52908400098527886e0f7030069857d2e4169ee7"}
		}, "", ""},
		{"payout EIP-55 and chain keys", func(in *partners.IntentInput) {
			in.PayoutAddresses = map[string]string{"evm": "0x52908400098527886E0F7030069857D2E4169EE7", "evm:8453": "0x8617e340b3d01fa5f11f306f4090fd50e238070d",
				"svm": "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T", "svm:mainnet": "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"}
		}, "", ""},
		{"payout bad checksum", func(in *partners.IntentInput) {
			in.PayoutAddresses = map[string]string{"evm": "0x52908400098527886E0F7030069857D2E4169Ee7"}
		}, "payoutAddresses.evm", "EIP-55"},
		{"payout solana too short", func(in *partners.IntentInput) { in.PayoutAddresses = map[string]string{"svm": "4Nd1mBQtrMJVYVfKf2PJ"} }, "payoutAddresses.svm", "32 bytes"},
		{"payout evm address under svm", func(in *partners.IntentInput) {
			in.PayoutAddresses = map[string]string{"svm": "0x52908400098527886e0f7030069857d2e4169ee7"}
		}, "payoutAddresses.svm", "Solana"},
		{"payout unknown namespace", func(in *partners.IntentInput) {
			in.PayoutAddresses = map[string]string{"btc": "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"}
		}, "payoutAddresses.btc", "namespace"},
		{"pricing shape on one-shot", func(in *partners.IntentInput) { in.PricingShape = partners.PricingShape(`{"managementFeeBps":100}`) }, "pricingShape", "null for one_shot"},
		{"delegation without pricing shape", func(in *partners.IntentInput) { in.Tier = "delegation" }, "pricingShape", "required for tier delegation"},
		{"delegation with pricing shape", func(in *partners.IntentInput) {
			in.Tier = "delegation"
			in.PricingShape = partners.PricingShape(`{"managementFeeBps":200,"performanceFeeBps":2000,"lockupSeconds":86400,"redemption":"anytime","highWaterMark":true,"vault":{"chain":"base"}}`)
		}, "", ""},
		{"pricing field mistyped", func(in *partners.IntentInput) {
			in.Tier = "delegation"
			in.PricingShape = partners.PricingShape(`{"managementFeeBps":1.5}`)
		}, "pricingShape.managementFeeBps", "integer"},
		{"pricing redemption not string", func(in *partners.IntentInput) {
			in.Tier = "delegation"
			in.PricingShape = partners.PricingShape(`{"redemption":true}`)
		}, "pricingShape.redemption", "string"},
		{"unknown tier", func(in *partners.IntentInput) { in.Tier = "forever" }, "tier", "one_shot or delegation"},
		{"too many sample queries", func(in *partners.IntentInput) { in.SampleQueries = make([]string, 11) }, "sampleQueries", "at most 10"},
		{"empty sample query", func(in *partners.IntentInput) { in.SampleQueries = []string{"ok", " "} }, "sampleQueries[1]", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.edit(&in)
			row, ps := v.Intent(context.Background(), &in)
			if tc.field == "" {
				if len(ps) != 0 {
					t.Fatalf("valid intent refused: %v", ps)
				}
				if row.VerificationStatus != "UNVERIFIED" || row.IsActive || row.TimeoutMs == 0 || row.BindingType == "" || row.Tier == "" || row.FeeRateUnit == "" {
					t.Fatalf("defaults not applied: %+v", row)
				}
				return
			}
			for _, p := range ps {
				if p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("problems %v, want %s: ...%s...", ps, tc.field, tc.msg)
		})
	}
}

func TestValidatorDefaults(t *testing.T) {
	v := partners.NewValidator(&outbound.Guard{AllowLocal: true})
	in := input("@defaults", "https://partner.example/tool")
	in.ParametersSchema = partners.SchemaDoc("{ \"type\" : \"object\",\n \"properties\": {\"b\": {\"type\":\"number\",\"maximum\": 1e2}, \"a\": {}} }")
	row, ps := v.Intent(context.Background(), &in)
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	// Kept as written, only whitespace removed: key order and number spelling survive.
	if row.ParametersSchema != `{"type":"object","properties":{"b":{"type":"number","maximum":1e2},"a":{}}}` {
		t.Fatalf("stored schema %s", row.ParametersSchema)
	}
	if row.TimeoutMs != 30000 || row.BindingType != "REST" || row.Tier != "one_shot" || row.FeeRateUnit != "usd_per_call" || row.FeeRate != "0" ||
		row.PricingShape != nil || row.PayoutAddresses != nil || row.OutputSchema != nil {
		t.Fatalf("defaults %+v", row)
	}
	in2 := input("@defaults-two", "https://partner.example/tool")
	row, _ = v.Intent(context.Background(), &in2)
	if row.ParametersSchema != partners.DefaultParametersSchema {
		t.Fatalf("default parameters schema %s", row.ParametersSchema)
	}
}

func TestSampleArgs(t *testing.T) {
	cases := map[string]string{
		`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`:                                                       `{"query":"example"}`,
		`{"type":"object","properties":{"ticker":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":365}},"required":["ticker"]}`: `{"ticker":"example"}`,
		`{"type":"object","properties":{"n":{"type":"integer","minimum":5}},"required":["n"]}`:                                                  `{"n":5}`,
		`{"type":"object","properties":{"c":{"enum":["a","b"]},"e":{"type":"string","examples":["ETH"]}},"required":["c","e"]}`:                 `{"c":"a","e":"ETH"}`,
		`{"type":"object","properties":{"s":{"type":"string","format":"email"}},"required":["s"]}`:                                              ``, // cannot make one
	}
	for schema, want := range cases {
		got := partners.SampleArgs(schema)
		if want == "" {
			if got != nil {
				t.Errorf("%s: got %s, want nothing", schema, got)
			}
			continue
		}
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal([]byte(want), &b)
		if ga, _ := json.Marshal(a); string(ga) != mustJSON(b) {
			t.Errorf("%s: got %s, want %s", schema, got, want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// The category rules are the one home of what a category means: the lists, the schema enum
// and the rules dispatch reads agree, and only token-moving writes need a scope, a known one.
func TestCategoryRulesAgree(t *testing.T) {
	all := append(slices.Clone(partners.WriteCategories), partners.IdempotentCategories...)
	for _, c := range partners.IdempotentCategories {
		if r := partners.RuleOf(c); r.Write || r.MovesTokens || r.Scope != "" || r.GasUnits != 0 {
			t.Errorf("idempotent %s has rule %+v", c, r)
		}
	}
	for _, c := range partners.WriteCategories {
		r := partners.RuleOf(c)
		if !r.Write {
			t.Errorf("rule of %s is not a write", c)
		}
		if r.MovesTokens != (r.Scope != "") || r.MovesTokens != (r.GasUnits > 0) {
			t.Errorf("rule of %s: token-moving writes, and only they, need a scope and pay gas: %+v", c, r)
		}
		if r.Scope != "" && !r.Scope.Known() {
			t.Errorf("rule of %s needs scope %q, which no key can carry", c, r.Scope)
		}
	}
	for _, c := range all {
		if !partners.IsCategory(c) {
			t.Errorf("%s is listed but not in the rules", c)
		}
	}
	if partners.IsCategory("LEND") || len(all) != 14 {
		t.Errorf("the category set is closed at the spec's 14: %v", all)
	}
	// The published enum is the same set, in the same order.
	tool := tools.New(tools.Def{Name: "publish_probe"}, func(context.Context, *tools.Caller, partners.IntentInput) (struct{}, error) { return struct{}{}, nil })
	var schema struct {
		Properties struct {
			Category struct {
				Enum        []string `json:"enum"`
				Description string   `json:"description"`
			} `json:"category"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties.Category; !slices.Equal(got.Enum, all) || !strings.Contains(got.Description, strings.Join(partners.WriteCategories, " ")) {
		t.Errorf("category schema %+v, want the enum %v", got, all)
	}
}
