package tokens

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Spam signals. They apply only to tokens on no trusted list (the registry, CoinGecko's
// lists, Jupiter's verified list): a listed token is never flagged by them.
var (
	urlPattern  = regexp.MustCompile(`(?i)(https?://|www\.|t\.me/|\.(com|io|xyz|org|net|app|site|live|gift|top|vip|cc|pro|finance|claims?|fun|online|click|link|info)\b)`)
	baitPattern = regexp.MustCompile(`(?i)(claim|airdrop|reward|giveaway|voucher|visit|bonus|free\s*(mint|tokens?|drop))`)
)

// confusables folds letters that look like Latin ones (Cyrillic, Greek, symbols) onto them.
var confusables = map[rune]rune{
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O',
	'Р': 'P', 'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'У': 'Y', 'а': 'a', 'с': 'c', 'е': 'e', 'і': 'i', 'ј': 'j',
	'о': 'o', 'р': 'p', 'ѕ': 's', 'х': 'x', 'у': 'y', 'ԁ': 'd', 'Ԁ': 'D',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'ο': 'o', 'ν': 'v', 'τ': 't', 'υ': 'u',
	'₮': 'T', 'ł': 'l', 'Ł': 'L', 'ß': 'B', '$': 'S', '€': 'E', '฿': 'B',
}

// skeleton reduces a ticker to what it looks like: a leading "$" dropped, compatibility-
// normalized (full-width letters become ASCII), invisible and separator characters dropped,
// confusables folded, uppercased.
func skeleton(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKC.String(strings.TrimLeft(strings.TrimSpace(s), "$")) {
		switch {
		case unicode.Is(unicode.Cf, r) || unicode.IsSpace(r) || unicode.Is(unicode.Mn, r):
			continue // zero-width joiners, BOMs, combining marks, spaces
		case r == '-' || r == '_' || r == '·':
			continue
		}
		if f, ok := confusables[r]; ok {
			r = f
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// spamSignals says why an unlisted token looks like spam, "" when it does not. majors are
// the registry's tickers; providerFlag is a provider's own spam verdict.
func spamSignals(ticker, name string, majors map[string]bool, providerFlag string) string {
	switch {
	case providerFlag != "":
		return providerFlag
	case urlPattern.MatchString(ticker) || urlPattern.MatchString(name):
		return "a URL in its name or ticker"
	case baitPattern.MatchString(ticker) || baitPattern.MatchString(name):
		return "claim/airdrop bait in its name or ticker"
	}
	sk := skeleton(ticker)
	if majors[sk] {
		if strings.ToUpper(strings.TrimSpace(ticker)) == sk {
			return "impersonates " + sk + ": same ticker as a major token but not its contract"
		}
		return "look-alike of " + sk + " (disguised characters in its ticker)"
	}
	return ""
}
