package app

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/switchboard-hq/switchboard/store/accounts"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/billing"
	"github.com/switchboard-hq/switchboard/tools/payments"
)

// billingConfig reads the prices; production accounts start with no credit.
func billingConfig(cfg Config) (billing.Config, error) {
	c := billing.DefaultConfig()
	var err error
	if c.SweepMargin, err = time.ParseDuration(cfg.SweepMargin); err != nil || c.SweepMargin < time.Second {
		return c, fmt.Errorf("SWITCHBOARD_SWEEP_MARGIN=%q: want a Go duration of at least 1s, e.g. 30s", cfg.SweepMargin)
	}
	if c.InfraCostMicro, err = usdMicro("SWITCHBOARD_INFRA_COST_USD", cfg.InfraCostUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if c.StartingGrantMicro, err = usdMicro("SWITCHBOARD_STARTING_CREDIT_USD", cfg.StartingCreditUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if cfg.Env == "production" {
		c.StartingGrantMicro = 0
	}
	if c.PlatformFloorMicro, err = usdMicro("SWITCHBOARD_PLATFORM_FLOOR_USD", cfg.PlatformFloorUSD, billing.MaxGrantMicro); err != nil {
		return c, err
	}
	if cfg.GasMarginBps < 0 || cfg.GasMarginBps > 100_000 {
		return c, fmt.Errorf("SWITCHBOARD_GAS_MARGIN_BPS=%d: want 0 to 100000 (0 to +1000%%)", cfg.GasMarginBps)
	}
	c.GasMarginBps = int64(cfg.GasMarginBps)
	if c.TierBps, c.DefaultTier, err = feeTiers(cfg.FeeTiers); err != nil {
		return c, err
	}
	return c, nil
}

var tierNameRe = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// feeTiers parses "standard=30,pro=15": tier names and their basis points. standard, every
// new account's tier, must be listed.
func feeTiers(v string) (map[string]int64, string, error) {
	bad := func(why string) error {
		return fmt.Errorf("SWITCHBOARD_FEE_TIERS=%q: %s; want tier=bps pairs, e.g. standard=30,pro=15 (bps 0 to 10000)", v, why)
	}
	tiers := map[string]int64{}
	for _, part := range strings.Split(v, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !tierNameRe.MatchString(name) {
			return nil, "", bad(fmt.Sprintf("%q is not tier=bps with a lowercase tier name", part))
		}
		bps, err := strconv.ParseInt(num, 10, 64)
		if err != nil || bps < 0 || bps > 10_000 {
			return nil, "", bad(fmt.Sprintf("tier %s: %q is not a whole number of basis points", name, num))
		}
		if _, dup := tiers[name]; dup {
			return nil, "", bad("tier " + name + " is listed twice")
		}
		tiers[name] = bps
	}
	if _, ok := tiers[accounts.DefaultTier]; !ok {
		return nil, "", bad(fmt.Sprintf("the tier %q (every new account's) must be listed", accounts.DefaultTier))
	}
	return tiers, accounts.DefaultTier, nil
}

// usdMicro parses a non-negative decimal USD amount with at most 6 places into micro-USD.
func usdMicro(name, v string, maxMicro int64) (int64, error) {
	d, err := decimal.NewFromString(v)
	if err != nil || d.IsNegative() || !d.Shift(6).IsInteger() || d.Shift(6).GreaterThan(decimal.New(maxMicro, 0)) {
		return 0, fmt.Errorf("%s=%q: want a non-negative USD amount with at most 6 decimals, at most %s", name, v, tools.USD(maxMicro))
	}
	return d.Shift(6).IntPart(), nil
}

// topupConfig reads credit_topup's bounds.
func topupConfig(cfg Config) (payments.TopupConfig, error) {
	var c payments.TopupConfig
	var err error
	f, def := cfg, Defaults() // unset (a configuration built without Defaults): the defaults
	for _, v := range []struct {
		got *string
		def string
	}{{&f.TopupMinUSD, def.TopupMinUSD}, {&f.TopupMaxUSD, def.TopupMaxUSD}, {&f.TopupCapUSD, def.TopupCapUSD}} {
		if *v.got == "" {
			*v.got = v.def
		}
	}
	if c.MinMicro, err = usdMicro("SWITCHBOARD_TOPUP_MIN_USD", f.TopupMinUSD, tools.MaxUSDMicro); err != nil {
		return c, err
	}
	if c.MaxMicro, err = usdMicro("SWITCHBOARD_TOPUP_MAX_USD", f.TopupMaxUSD, tools.MaxUSDMicro); err != nil {
		return c, err
	}
	if c.CapMicro, err = usdMicro("SWITCHBOARD_TOPUP_BALANCE_CAP_USD", f.TopupCapUSD, billing.MaxBalanceMicro); err != nil {
		return c, err
	}
	if c.MinMicro <= 0 || c.MinMicro > c.MaxMicro || c.MaxMicro > c.CapMicro {
		return c, fmt.Errorf("SWITCHBOARD_TOPUP_MIN_USD (%s), SWITCHBOARD_TOPUP_MAX_USD (%s), SWITCHBOARD_TOPUP_BALANCE_CAP_USD (%s): want 0 < min <= max <= cap", f.TopupMinUSD, f.TopupMaxUSD, f.TopupCapUSD)
	}
	return c, nil
}
