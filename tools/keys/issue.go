package keys

import (
	"context"
	"slices"
	"strings"

	"github.com/switchboard-hq/switchboard/tools"
)

// MaxRatePerMinute is the highest rate limit the operator may give a key (admin key issue)
// and the agent default (SWITCHBOARD_DEFAULT_RATE_LIMIT_PER_MINUTE, checked at start) may be:
// one bound, so that serve never starts on a default the operator's keys are refused. It is
// above what one replica serves (16,666 calls a second), so it never stands in for capacity
// planning; a key made with api_key_create is held to its calling key's limit and its schema's.
const MaxRatePerMinute = 1_000_000

// IssueInput is an operator's key for an account (switchboard admin key issue): a root key,
// as agent_verify's, with the scopes and limits the operator names.
type IssueInput struct {
	AccountID string
	Name      string
	Scopes    []string
	Limits    *Limits // nil: the agent defaults
}

// Issue mints and stores a root key for an account on the operator's word: no calling key
// bounds it, so the scopes are checked against the known ones and the limits against the
// service's maxima; the account's cap on live keys holds.
func (s *Service) Issue(ctx context.Context, in IssueInput) (CreateOutput, error) {
	if len(in.Scopes) == 0 {
		return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "name at least one scope, e.g. read,partner (the scopes: %s)", strings.Join(tools.ScopeNames(), ","))
	}
	var scopes []string
	for _, sc := range in.Scopes {
		sc = strings.TrimSpace(sc)
		if !tools.Scope(sc).Known() {
			return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "unknown scope %q; the scopes are %s", sc, strings.Join(tools.ScopeNames(), ","))
		}
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	lim := s.defaults
	if in.Limits != nil {
		lim = *in.Limits
	}
	if lim.SpendMicro < 0 || lim.SpendMicro > tools.MaxUSDMicro {
		return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "the spend limit must be between 0 and %s USD", tools.USD(tools.MaxUSDMicro))
	}
	if lim.RatePerMinute < 1 || lim.RatePerMinute > MaxRatePerMinute {
		return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "the rate limit must be 1 to %d requests per minute, got %d", MaxRatePerMinute, lim.RatePerMinute)
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = "issued by the operator"
	}
	if len(name) > 100 {
		return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "the key's name is %d characters; at most 100", len(name))
	}
	key, secret := s.New(in.AccountID, name, scopes, lim)
	if err := s.mint(ctx, key); err != nil { // within the account's cap, as every key but agent_verify's
		return CreateOutput{}, err
	}
	return CreateOutput{Meta: MetaOf(key), Secret: secret}, nil
}
