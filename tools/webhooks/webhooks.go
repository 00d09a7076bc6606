// Package webhooks sends an account's events as Standard Webhooks: the event catalogue and
// Emit (an outbox row written in the transaction of what caused it), the endpoint and delivery
// tools (webhook_endpoint_*, webhook_delivery_*), and the worker every replica runs, which
// fans events out to endpoints and delivers them at least once, retrying with backoff.
package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-hq/switchboard/signing"
	"github.com/switchboard-hq/switchboard/store"
	"github.com/switchboard-hq/switchboard/store/outbox"
	"github.com/switchboard-hq/switchboard/tools"
	"github.com/switchboard-hq/switchboard/tools/partners/outbound"
	"github.com/switchboard-hq/switchboard/tools/service"
)

// Defaults of delivery.
const (
	// DefaultRetryWindow is how long a failing delivery is retried before it is given up
	// (webhook_delivery_replay sends it again).
	DefaultRetryWindow = 24 * time.Hour
	// DefaultDisableAfter is how long an endpoint may fail every attempt before it is disabled.
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultTimeout bounds one attempt (Standard Webhooks recommends 15 to 30 s).
	DefaultTimeout = 15 * time.Second
	// DefaultRetention is how long an event (with its deliveries and attempts) is kept for
	// webhook_delivery_list and webhook_delivery_replay once nothing waits to deliver it.
	DefaultRetention = 30 * 24 * time.Hour
	// MaxEndpoints is the most endpoints an account holds.
	MaxEndpoints = 10
	// maxResponseBody is how much of a receiver's answer is read (and ignored).
	maxResponseBody = 4 << 10
	firstRetry      = 5 * time.Second
	maxRetryDelay   = 4 * time.Hour
)

// Config configures the service.
type Config struct {
	// SecretKey derives each endpoint's HMAC secret from its stored salt, so the database
	// alone does not hold the secrets.
	SecretKey []byte
	// Signer signs the v1a signature with the service key.
	Signer *signing.Signer
	// Client is the outbound client partners are called with: the SSRF guard at every dial,
	// verified TLS, no redirects.
	Client *outbound.Client
	// AllowLocal mirrors SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS: http and local addresses allowed.
	AllowLocal bool
	// Notify tells an account's owner something by e-mail (nil: no mailer).
	Notify func(ctx context.Context, accountID, subject, text string) error
	// Replica names this process's leases; "" picks a random name.
	Replica      string
	RetryWindow  time.Duration // 0: DefaultRetryWindow
	DisableAfter time.Duration // 0: DefaultDisableAfter
	Timeout      time.Duration // 0: DefaultTimeout
	Retention    time.Duration // 0: DefaultRetention
	// Listeners is told when an account's endpoints change here (nil: nobody is).
	Listeners *Listeners
	// Slots, PerEndpoint and PerAccount are the sender's shares (0: DefaultSlots,
	// DefaultPerEndpoint, DefaultPerAccount).
	Slots, PerEndpoint, PerAccount int
}

// Service manages endpoints and delivers events.
type Service struct {
	cfg    Config
	store  *store.Store
	outbox outbox.Outbox
	now    func() time.Time
	log    *slog.Logger
}

// NewService builds the webhook service.
func NewService(cfg Config, d service.Deps) (*Service, error) {
	d = d.WithDefaults()
	if len(cfg.SecretKey) < 16 || cfg.Signer == nil || cfg.Client == nil {
		return nil, errors.New("webhooks: a secret key, a signer and an outbound client are required")
	}
	if cfg.Replica == "" {
		cfg.Replica = "replica-" + NewID()[4:]
	}
	if cfg.RetryWindow <= 0 {
		cfg.RetryWindow = DefaultRetryWindow
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = DefaultPerEndpoint
	}
	if cfg.PerAccount <= 0 {
		cfg.PerAccount = DefaultPerAccount
	}
	return &Service{cfg: cfg, store: d.Store, outbox: outbox.New(d.Store), now: d.Now, log: d.Log}, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// secret is an endpoint's HMAC secret: derived from the service's secret key, the endpoint's
// id and its random salt (32 bytes, inside Standard Webhooks' 24 to 64).
func (s *Service) secret(ep *outbox.Endpoint) []byte {
	m := hmac.New(sha256.New, s.cfg.SecretKey)
	m.Write([]byte("webhook endpoint secret v1\x00" + ep.ID + "\x00"))
	m.Write(ep.SecretSalt)
	return m.Sum(nil)
}

// PublicKey is the v1a key as Standard Webhooks writes it (whpk_...): the same key as
// /.well-known/service-public-key.
func (s *Service) PublicKey() string { return signing.WebhookPublicKeyString(s.cfg.Signer.PublicKey()) }

// Endpoint is an endpoint as listed.
type Endpoint struct {
	ID             string     `json:"id" jsonschema_description:"endpoint id, for webhook_endpoint_delete and webhook_delivery_list"`
	URL            string     `json:"url"`
	Description    string     `json:"description,omitempty"`
	EventTypes     []string   `json:"eventTypes" jsonschema_description:"the event types it receives; empty is every type"`
	CreatedAt      time.Time  `json:"createdAt"`
	FailingSince   *time.Time `json:"failingSince,omitempty" jsonschema_description:"when its current run of failed attempts began; absent when its last attempt succeeded"`
	DisabledAt     *time.Time `json:"disabledAt,omitempty" jsonschema_description:"when it was disabled (failing for days, or it answered 410 Gone); webhook_delivery_replay of one of its deliveries enables it again"`
	DisabledReason string     `json:"disabledReason,omitempty"`
}

func endpointOf(ep *outbox.Endpoint) Endpoint {
	return Endpoint{ID: ep.ID, URL: ep.URL, Description: ep.Description, EventTypes: nonNil(ep.EventTypes), CreatedAt: ep.CreatedAt.UTC(),
		FailingSince: utc(ep.FailingSince), DisabledAt: utc(ep.DisabledAt), DisabledReason: ep.DisabledReason}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// CreateInput is webhook_endpoint_create's input.
type CreateInput struct {
	URL         string   `json:"url" jsonschema:"minLength=1,maxLength=2048" jsonschema_description:"https URL the events are POSTed to"`
	Description string   `json:"description,omitempty" jsonschema:"maxLength=200"`
	EventTypes  []string `json:"eventTypes,omitempty" jsonschema:"maxItems=15,uniqueItems=true" jsonschema_description:"event types to receive (call.succeeded, call.failed, call.refunded, approval.requested, approval.decided, policy.denied, intent.activated, intent.deactivated, payout.settled, key.created, key.revoked, wallet.exported, credit.topped_up, x402.paid, x402.failed); omit for every type"`
}

// CreateOutput is the new endpoint with its secret, shown this once.
type CreateOutput struct {
	Endpoint  Endpoint `json:"endpoint"`
	Secret    string   `json:"secret" jsonschema_description:"the endpoint's HMAC secret (whsec_...) for the v1 signature; shown only now, store it"`
	PublicKey string   `json:"publicKey" jsonschema_description:"the service's Ed25519 key (whpk_...) for the v1a signature, also at /.well-known/service-public-key"`
}

// ListEndpointsInput is webhook_endpoint_list's (empty) input.
type ListEndpointsInput struct{}

// ListEndpointsOutput lists the account's endpoints.
type ListEndpointsOutput struct {
	Endpoints []Endpoint `json:"endpoints"`
	PublicKey string     `json:"publicKey" jsonschema_description:"the service's Ed25519 key (whpk_...) that verifies every v1a signature"`
}

// DeleteInput is webhook_endpoint_delete's input.
type DeleteInput struct {
	EndpointID string `json:"endpointId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"from webhook_endpoint_list"`
}

// DeleteOutput confirms a deletion.
type DeleteOutput struct {
	Deleted string `json:"deleted"`
}

// Attempt is one try of a delivery.
type Attempt struct {
	At         time.Time `json:"at"`
	Status     int       `json:"status" jsonschema_description:"the receiver's HTTP status; 0 when none came back"`
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"durationMs"`
}

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	ID            string     `json:"id" jsonschema_description:"delivery id, for webhook_delivery_replay"`
	WebhookID     string     `json:"webhookId" jsonschema_description:"the webhook-id header: the same on every attempt and replay"`
	EventType     string     `json:"eventType"`
	EndpointID    string     `json:"endpointId"`
	URL           string     `json:"url"`
	State         string     `json:"state" jsonschema:"enum=pending,enum=delivered,enum=failed"`
	NextAttemptAt *time.Time `json:"nextAttemptAt,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	DeliveredAt   *time.Time `json:"deliveredAt,omitempty"`
	Attempts      []Attempt  `json:"attempts"`
}

// ListDeliveriesInput is webhook_delivery_list's input.
type ListDeliveriesInput struct {
	EndpointID string     `json:"endpointId,omitempty" jsonschema:"maxLength=64"`
	State      string     `json:"state,omitempty" jsonschema:"enum=pending,enum=delivered,enum=failed"`
	Before     *time.Time `json:"before,omitempty" jsonschema_description:"the previous page's nextBefore: list the deliveries after it"`
	BeforeID   string     `json:"beforeId,omitempty" jsonschema:"maxLength=64" jsonschema_description:"the previous page's nextBeforeId, with before: deliveries created at the same time are neither skipped nor repeated"`
	Limit      int        `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100" jsonschema_description:"default 20"`
}

// ListDeliveriesOutput is a page of deliveries, newest first.
type ListDeliveriesOutput struct {
	Deliveries   []Delivery `json:"deliveries"`
	NextBefore   *time.Time `json:"nextBefore,omitempty" jsonschema_description:"pass as before for the next page, with nextBeforeId; absent on the last"`
	NextBeforeID string     `json:"nextBeforeId,omitempty" jsonschema_description:"pass as beforeId for the next page, with nextBefore"`
}

// ReplayInput is webhook_delivery_replay's input.
type ReplayInput struct {
	DeliveryID string `json:"deliveryId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"from webhook_delivery_list"`
}

// ReplayOutput is the delivery, due again now.
type ReplayOutput struct {
	Delivery Delivery `json:"delivery"`
	Notice   string   `json:"notice,omitempty"`
}

// access is who manages webhooks: scope publish (the partner toolset, so an agent key's tools/list stays small), and the account as a whole, because an
// endpoint receives every event of the account: the portal's human or a root key (one
// agent_verify or the portal issued), never a key minted under another, nor an OAuth
// connection (nothing a grant creates outlives it).
var access = tools.RequireScope(tools.ScopePublish)

func checkCaller(c *tools.Caller) error {
	p := c.Principal
	switch {
	case p.Method == tools.AuthOAuth:
		return tools.Errorf(tools.CodeForbidden, "an OAuth connection cannot manage webhooks: an endpoint receives every event of the account and would outlive the connection. Use the account's API key from agent_verify, or the portal's Webhooks page")
	case p.Method == tools.AuthAPIKey && len(p.Ancestors) > 0:
		return tools.Errorf(tools.CodeForbidden, "this key was minted under another key, and an endpoint receives every event of the account; manage webhooks with a root key (the one agent_verify issued, or one issued on the portal) or on the portal's Webhooks page")
	}
	return nil
}

// Tools returns the webhook tools.
func (s *Service) Tools() []*tools.Tool {
	rw := tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(false), OpenWorld: tools.Bool(false)}
	ro := tools.Annotations{ReadOnly: tools.Bool(true), Idempotent: true, OpenWorld: tools.Bool(false)}
	return []*tools.Tool{
		tools.New(tools.Def{
			Name:  "webhook_endpoint_create",
			Title: "Create webhook endpoint",
			Description: "Register an https URL to receive the account's events as Standard Webhooks (signed POSTs with webhook-id, webhook-timestamp and webhook-signature). " +
				"Choose eventTypes or omit them for all. Returns the endpoint's HMAC secret (whsec_..., verifies the v1 signature; shown once) and the service's public key (whpk_..., verifies v1a). " +
				"Deliveries are retried with backoff for 24 hours; the same webhook-id is sent on every retry, so process each id once. Needs scope publish and a root key (or the portal).",
			Access: access, Annotations: rw,
			TakesIdempotencyKey: true,
		}, s.create),
		tools.New(tools.Def{
			Name:        "webhook_endpoint_list",
			Title:       "List webhook endpoints",
			Description: "List the account's webhook endpoints: url, event types, whether one is failing or disabled, and the public key that verifies v1a signatures. Never the secrets.",
			Access:      access, Annotations: ro,
		}, s.listEndpoints),
		tools.New(tools.Def{
			Name:        "webhook_endpoint_delete",
			Title:       "Delete webhook endpoint",
			Description: "Delete a webhook endpoint by id (from webhook_endpoint_list), with its deliveries: nothing more is sent to it.",
			Access:      access, Annotations: tools.Annotations{ReadOnly: tools.Bool(false), Destructive: tools.Bool(true), Idempotent: false, OpenWorld: tools.Bool(false)},
		}, s.delete),
		tools.New(tools.Def{
			Name:  "webhook_delivery_list",
			Title: "List webhook deliveries",
			Description: "List the account's webhook deliveries, newest first, each with its webhook-id, event type, state (pending, delivered, failed), and every attempt (time, HTTP status, error). " +
				"Filter by endpointId or state; page with before and beforeId (the previous page's nextBefore and nextBeforeId).",
			Access: access, Annotations: ro,
		}, s.listDeliveries),
		tools.New(tools.Def{
			Name:  "webhook_delivery_replay",
			Title: "Replay webhook delivery",
			Description: "Send a delivery again now (a failed one after its retries ran out, or a delivered one), with the same webhook-id and body and a fresh timestamp and signatures; " +
				"it is retried with backoff again if it fails. Replaying a delivery of a disabled endpoint enables the endpoint again.",
			Access: access, Annotations: rw,
			TakesIdempotencyKey: true,
		}, s.replay),
	}
}

func (s *Service) create(ctx context.Context, c *tools.Caller, in CreateInput) (CreateOutput, error) {
	if err := checkCaller(c); err != nil {
		return CreateOutput{}, err
	}
	u, err := s.checkURL(ctx, in.URL)
	if err != nil {
		return CreateOutput{}, err
	}
	for _, t := range in.EventTypes {
		if !Known(t) {
			return CreateOutput{}, tools.Errorf(tools.CodeBadInput, "unknown event type %q; the event types are %s (omit eventTypes for all)", t, strings.Join(Types, ", "))
		}
	}
	if c.CallID != "" {
		// A call with an idempotency key retried after its process died: the endpoint it
		// created, if it got that far, has the call's id, and its answer can be given again
		// (the secret derives from the endpoint's salt).
		ep, err := s.outbox.WebhookEndpoint(ctx, c.Principal.AccountID, endpointID(c.CallID))
		if err == nil {
			return CreateOutput{Endpoint: endpointOf(ep), Secret: signing.WebhookSecretString(s.secret(ep)), PublicKey: s.PublicKey()}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return CreateOutput{}, err
		}
	}
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return CreateOutput{}, err
	}
	ep := &outbox.Endpoint{ID: endpointID(c.NewCallID()), AccountID: c.Principal.AccountID, URL: u.String(), Description: strings.TrimSpace(in.Description),
		EventTypes: nonNil(slices.Clone(in.EventTypes)), SecretSalt: salt, CreatedAt: s.clock()}
	defer s.cfg.Listeners.Forget(ep.AccountID)
	if err := s.outbox.CreateWebhookEndpoint(ctx, ep, MaxEndpoints); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return CreateOutput{}, tools.Errorf(tools.CodeConflict, "this account already has %d webhook endpoints, the most it may hold; delete one (webhook_endpoint_list, then webhook_endpoint_delete) first", MaxEndpoints)
		}
		return CreateOutput{}, err
	}
	return CreateOutput{Endpoint: endpointOf(ep), Secret: signing.WebhookSecretString(s.secret(ep)), PublicKey: s.PublicKey()}, nil
}

// endpointID is the id of the endpoint a call (its id, a UUID) creates: one call never
// creates two.
func endpointID(callID string) string { return "we_" + strings.ReplaceAll(callID, "-", "") }

// checkURL checks an endpoint URL as partner endpoints are checked (the same guard checks
// every dial again): https on port 443 or 8443, a host resolving only to public addresses;
// http, local addresses and any port only on a development server
// (SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS).
func (s *Service) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if scheme, _, ok := strings.Cut(raw, "://"); ok && strings.EqualFold(scheme, "http") && !s.cfg.AllowLocal {
		return nil, tools.Errorf(tools.CodeBadInput, "url must be https:// (webhooks carry account events; http is allowed only on a development server with SWITCHBOARD_ALLOW_LOCAL_ENDPOINTS)")
	}
	u, err := s.cfg.Client.Guard().CheckURL(ctx, raw)
	var urlErr *outbound.URLError
	switch {
	case errors.As(err, &urlErr):
		return nil, tools.Errorf(tools.CodeBadInput, "url: %s", strings.ReplaceAll(urlErr.Reason, "partner endpoints", "webhook endpoints"))
	case outbound.IsBlocked(err):
		return nil, tools.Errorf(tools.CodeBadInput, "url: %s", strings.ReplaceAll(err.Error(), "partner endpoints", "webhook endpoints"))
	case err != nil:
		return nil, tools.Errorf(tools.CodeBadInput, "url: %s; check its spelling and DNS, or use a public https URL", outbound.Summary(err))
	}
	return u, nil
}

func (s *Service) listEndpoints(ctx context.Context, c *tools.Caller, _ ListEndpointsInput) (ListEndpointsOutput, error) {
	if err := checkCaller(c); err != nil {
		return ListEndpointsOutput{}, err
	}
	eps, err := s.outbox.WebhookEndpoints(ctx, c.Principal.AccountID)
	if err != nil {
		return ListEndpointsOutput{}, err
	}
	out := ListEndpointsOutput{Endpoints: make([]Endpoint, 0, len(eps)), PublicKey: s.PublicKey()}
	for _, ep := range eps {
		out.Endpoints = append(out.Endpoints, endpointOf(ep))
	}
	return out, nil
}

func (s *Service) delete(ctx context.Context, c *tools.Caller, in DeleteInput) (DeleteOutput, error) {
	if err := checkCaller(c); err != nil {
		return DeleteOutput{}, err
	}
	defer s.cfg.Listeners.Forget(c.Principal.AccountID)
	if err := s.outbox.DeleteWebhookEndpoint(ctx, c.Principal.AccountID, in.EndpointID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return DeleteOutput{}, tools.Errorf(tools.CodeNotFound, "no webhook endpoint %q in this account; webhook_endpoint_list shows their ids", in.EndpointID)
		}
		return DeleteOutput{}, err
	}
	return DeleteOutput{Deleted: in.EndpointID}, nil
}

// Deliveries lists an account's deliveries with their attempts (the tool and the portal).
func (s *Service) Deliveries(ctx context.Context, accountID string, in ListDeliveriesInput) (ListDeliveriesOutput, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 20
	}
	f := outbox.DeliveryFilter{EndpointID: in.EndpointID, State: in.State, BeforeID: in.BeforeID, Limit: limit + 1}
	switch {
	case in.Before != nil:
		f.Before = *in.Before
	case in.BeforeID != "":
		return ListDeliveriesOutput{}, tools.Errorf(tools.CodeBadInput, "beforeId goes with before: pass the previous page's nextBefore and nextBeforeId together")
	}
	rows, err := s.outbox.WebhookDeliveries(ctx, accountID, f)
	if err != nil {
		return ListDeliveriesOutput{}, err
	}
	var out ListDeliveriesOutput
	if len(rows) > limit {
		rows = rows[:limit]
		next := rows[limit-1].CreatedAt.UTC()
		out.NextBefore, out.NextBeforeID = &next, rows[limit-1].ID
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	attempts, err := s.outbox.WebhookAttempts(ctx, ids)
	if err != nil {
		return ListDeliveriesOutput{}, err
	}
	out.Deliveries = make([]Delivery, 0, len(rows))
	for _, r := range rows {
		out.Deliveries = append(out.Deliveries, deliveryOf(&r.Delivery, r.EventType, r.URL, attempts[r.ID]))
	}
	return out, nil
}

func deliveryOf(d *outbox.Delivery, eventType, url string, attempts []*outbox.Attempt) Delivery {
	out := Delivery{ID: d.ID, WebhookID: d.EventID, EventType: eventType, EndpointID: d.EndpointID, URL: url, State: d.State,
		CreatedAt: d.CreatedAt.UTC(), DeliveredAt: utc(d.DeliveredAt), Attempts: make([]Attempt, 0, len(attempts))}
	if d.State == outbox.DeliveryPending {
		out.NextAttemptAt = utc(&d.NextAttemptAt)
	}
	for _, a := range attempts {
		out.Attempts = append(out.Attempts, Attempt{At: a.At.UTC(), Status: a.Status, Error: a.Error, DurationMs: a.DurationMs})
	}
	return out
}

func (s *Service) listDeliveries(ctx context.Context, c *tools.Caller, in ListDeliveriesInput) (ListDeliveriesOutput, error) {
	if err := checkCaller(c); err != nil {
		return ListDeliveriesOutput{}, err
	}
	return s.Deliveries(ctx, c.Principal.AccountID, in)
}

func (s *Service) replay(ctx context.Context, c *tools.Caller, in ReplayInput) (ReplayOutput, error) {
	if err := checkCaller(c); err != nil {
		return ReplayOutput{}, err
	}
	defer s.cfg.Listeners.Forget(c.Principal.AccountID)
	d, reenabled, err := s.outbox.ReplayWebhookDelivery(ctx, c.Principal.AccountID, in.DeliveryID, s.clock())
	if errors.Is(err, store.ErrNotFound) {
		return ReplayOutput{}, tools.Errorf(tools.CodeNotFound, "no webhook delivery %q in this account; webhook_delivery_list shows their ids", in.DeliveryID)
	}
	if err != nil {
		return ReplayOutput{}, err
	}
	send, err := s.outbox.WebhookSendOf(ctx, d.ID)
	if err != nil {
		return ReplayOutput{}, err
	}
	attempts, err := s.outbox.WebhookAttempts(ctx, []string{d.ID})
	if err != nil {
		return ReplayOutput{}, err
	}
	out := ReplayOutput{Delivery: deliveryOf(d, send.Event.Type, send.Endpoint.URL, attempts[d.ID])}
	if reenabled {
		out.Notice = "the endpoint was disabled; replaying enabled it again, so its other pending deliveries are sent too"
	}
	return out, nil
}
