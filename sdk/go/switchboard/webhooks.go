package switchboard

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// WebhookEndpoint is a URL the account's events are POSTed to (Standard Webhooks).
type WebhookEndpoint struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Description    string     `json:"description,omitempty"`
	EventTypes     []string   `json:"eventTypes"`
	CreatedAt      time.Time  `json:"createdAt"`
	FailingSince   *time.Time `json:"failingSince,omitempty"`
	DisabledAt     *time.Time `json:"disabledAt,omitempty"`
	DisabledReason string     `json:"disabledReason,omitempty"`
}

// WebhookEndpointInput creates an endpoint; no EventTypes means every type.
type WebhookEndpointInput struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	EventTypes  []string `json:"eventTypes,omitempty"`
}

// CreatedWebhookEndpoint is a new endpoint with its secret (whsec_..., verifies v1), shown
// only here, and the service's public key (whpk_..., verifies v1a).
type CreatedWebhookEndpoint struct {
	Endpoint  WebhookEndpoint `json:"endpoint"`
	Secret    string          `json:"secret"`
	PublicKey string          `json:"publicKey"`
}

// WebhookEndpoints lists the account's endpoints.
type WebhookEndpoints struct {
	Endpoints []WebhookEndpoint `json:"endpoints"`
	PublicKey string            `json:"publicKey"`
}

// WebhookAttempt is one try of a delivery.
type WebhookAttempt struct {
	At         time.Time `json:"at"`
	Status     int       `json:"status"`
	Error      string    `json:"error,omitempty"`
	DurationMs int64     `json:"durationMs"`
}

// WebhookDelivery is one event on its way to one endpoint.
type WebhookDelivery struct {
	ID            string           `json:"id"`
	WebhookID     string           `json:"webhookId"`
	EventType     string           `json:"eventType"`
	EndpointID    string           `json:"endpointId"`
	URL           string           `json:"url"`
	State         string           `json:"state"`
	NextAttemptAt *time.Time       `json:"nextAttemptAt,omitempty"`
	CreatedAt     time.Time        `json:"createdAt"`
	DeliveredAt   *time.Time       `json:"deliveredAt,omitempty"`
	Attempts      []WebhookAttempt `json:"attempts"`
}

// WebhookDeliveries is a page of deliveries, newest first: pass NextBefore and NextBeforeID as
// the next query's Before and BeforeID.
type WebhookDeliveries struct {
	Deliveries   []WebhookDelivery `json:"deliveries"`
	NextBefore   *time.Time        `json:"nextBefore,omitempty"`
	NextBeforeID string            `json:"nextBeforeId,omitempty"`
}

// WebhookDeliveryQuery filters deliveries; zero fields are left out.
type WebhookDeliveryQuery struct {
	EndpointID string
	State      string // pending, delivered, failed
	Before     time.Time
	BeforeID   string // with Before: deliveries created at the same time are neither skipped nor repeated
	Limit      int
}

// WebhookReplay is a replayed delivery.
type WebhookReplay struct {
	Delivery WebhookDelivery `json:"delivery"`
	Notice   string          `json:"notice,omitempty"`
}

// CreateWebhookEndpoint registers an https URL for the account's events (POST /v1/webhooks/endpoints).
func (c *Client) CreateWebhookEndpoint(ctx context.Context, in WebhookEndpointInput) (*CreatedWebhookEndpoint, error) {
	return callT[CreatedWebhookEndpoint](ctx, c, "webhook_endpoint_create", nil, nil, in)
}

// ListWebhookEndpoints lists the account's endpoints (GET /v1/webhooks/endpoints).
func (c *Client) ListWebhookEndpoints(ctx context.Context) (*WebhookEndpoints, error) {
	return callT[WebhookEndpoints](ctx, c, "webhook_endpoint_list", nil, nil, nil)
}

// DeleteWebhookEndpoint stops sending to an endpoint (DELETE /v1/webhooks/endpoints/{endpoint_id}).
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, endpointID string) error {
	return c.call(ctx, "webhook_endpoint_delete", map[string]string{"endpoint_id": endpointID}, nil, nil, nil)
}

// ListWebhookDeliveries lists deliveries with their attempts (GET /v1/webhooks/deliveries).
func (c *Client) ListWebhookDeliveries(ctx context.Context, q WebhookDeliveryQuery) (*WebhookDeliveries, error) {
	v := url.Values{}
	if q.EndpointID != "" {
		v.Set("endpointId", q.EndpointID)
	}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if !q.Before.IsZero() {
		v.Set("before", q.Before.UTC().Format(time.RFC3339Nano))
	}
	if q.BeforeID != "" {
		v.Set("beforeId", q.BeforeID)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return callT[WebhookDeliveries](ctx, c, "webhook_delivery_list", nil, v, nil)
}

// ReplayWebhookDelivery sends a delivery again now, with the same webhook-id
// (POST /v1/webhooks/deliveries/{delivery_id}/replay).
func (c *Client) ReplayWebhookDelivery(ctx context.Context, deliveryID string) (*WebhookReplay, error) {
	return callT[WebhookReplay](ctx, c, "webhook_delivery_replay", map[string]string{"delivery_id": deliveryID}, nil, nil)
}
