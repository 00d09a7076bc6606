package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"
)

// The summaries of failures a loopback receiver cannot produce: a connection that times out
// before it is accepted (an address that drops packets), and a name with no address.
func TestSummarizeWhatLoopbackCannotShow(t *testing.T) {
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://hooks.example/events", Err: err} }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{post(&net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}), "timed out connecting: nothing answered the connection"},
		{post(errors.Join(&net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded})), "timed out connecting: nothing answered the connection"},
		{post(fmt.Errorf("resolve hooks.example: no addresses")), "the host does not resolve"},
		{post(&net.DNSError{Err: "server misbehaving", Name: "hooks.example", Server: "10.0.0.2:53", IsTemporary: true}), "the host does not resolve"},
		{post(context.DeadlineExceeded), "timed out after 15 s without an answer"},
		{post(errors.New("net/http: TLS handshake timeout")), "TLS handshake timed out: the endpoint accepted the connection and did not answer"},
	} {
		if got := summarize(tc.err, 15*time.Second); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
	}
}
