package portal_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Try it with a {query} write: the confirmation sends the message it was quoted with (a
// confirmRequestId with another message is CONFLICT, issue 46 item 6), so the confirm form
// carries the query and the call goes out with it.
func TestTryItConfirmsAQueryWrite(t *testing.T) {
	env, partner := withPartner(t, nil)
	pub := env.Onboard(t, "tryq-pub@example.com")["apiKey"].(string)
	publishLive(t, env, pub, weather(partner, "@try-qwrite", "EXECUTE"), true)
	h := newHuman(t, env)
	h.signIn("tryq@example.com")
	h.get("/marketplace/@try-qwrite")
	before := len(partner.Hits())
	st, body := h.post("/marketplace/@try-qwrite", url.Values{"csrf": {h.csrf()}, "action": {"try"}, "query": {"rain in Lisbon"}}, false)
	m := regexp.MustCompile(`name="confirmRequestId" value="([0-9a-f-]{36})"`).FindStringSubmatch(body)
	if st != 200 || m == nil || !strings.Contains(body, `name="query" value="rain in Lisbon"`) || len(partner.Hits()) != before {
		t.Fatalf("quote: %d, hits %d\n%s", st, len(partner.Hits())-before, body)
	}
	st, body = h.post("/marketplace/@try-qwrite", url.Values{"csrf": {h.csrf()}, "action": {"confirm"}, "confirmRequestId": {m[1]}, "query": {"rain in Lisbon"}}, false)
	if st != 200 || len(partner.Hits()) != before+1 || !strings.Contains(string(partner.Hits()[before].Body), "rain in Lisbon") {
		t.Fatalf("confirm: %d hits %d\n%s", st, len(partner.Hits())-before, body)
	}
}
