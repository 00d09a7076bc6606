package onboarding

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	mail "github.com/wneessen/go-mail"
)

// Message is a plain-text e-mail.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends e-mail.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// SMTPMailer sends through an SMTP server with go-mail.
type SMTPMailer struct {
	host string
	from string
	opts []mail.Option
}

// NewSMTPMailer parses smtp://user:pass@host:port (STARTTLS when the server offers it) or
// smtps://... (implicit TLS).
func NewSMTPMailer(rawURL, from string) (*SMTPMailer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("SWITCHBOARD_SMTP_URL: %w", err)
	}
	opts := []mail.Option{mail.WithTimeout(15 * time.Second)}
	switch u.Scheme {
	case "smtp":
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	case "smtps":
		opts = append(opts, mail.WithSSL())
	default:
		return nil, fmt.Errorf("SWITCHBOARD_SMTP_URL: scheme %q, want smtp or smtps", u.Scheme)
	}
	if p := u.Port(); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("SWITCHBOARD_SMTP_URL: port %q: %w", p, err)
		}
		opts = append(opts, mail.WithPort(port))
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthAutoDiscover),
			mail.WithUsername(u.User.Username()), mail.WithPassword(pass))
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("SWITCHBOARD_SMTP_URL: no host")
	}
	return &SMTPMailer{host: u.Hostname(), from: from, opts: opts}, nil
}

// Send delivers m.
func (s *SMTPMailer) Send(ctx context.Context, m Message) error {
	msg := mail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("sender %q: %w", s.from, err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("recipient: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	c, err := mail.NewClient(s.host, s.opts...)
	if err != nil {
		return fmt.Errorf("smtp client: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("smtp send: %w", err)
	}
	return nil
}

// DevMailer writes messages to the log instead of sending them: the development default when
// no SMTP server is configured. It is the only place a code is ever logged.
type DevMailer struct {
	Log *slog.Logger
}

// Send logs m, clearly marked as not sent.
func (d DevMailer) Send(ctx context.Context, m Message) error {
	d.Log.WarnContext(ctx, "DEVELOPMENT MAILER: e-mail NOT sent, shown here instead (set SWITCHBOARD_SMTP_URL to send)",
		"to", m.To, "subject", m.Subject, "text", m.Text)
	return nil
}
