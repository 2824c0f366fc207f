-- Webhook endpoints, their deliveries (one per endpoint and event, or per redelivery) and
-- every attempt of every delivery.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_until BIGINT,
    disabled_at BIGINT,
    disabled_reason TEXT,
    failures BIGINT NOT NULL DEFAULT 0,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhooks_by_tenant ON webhooks (tenant_id, id);
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    event_id TEXT NOT NULL REFERENCES events (id),
    tenant_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_status BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
CREATE TABLE webhook_attempts (
    id TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    attempt BIGINT NOT NULL,
    at BIGINT NOT NULL,
    status BIGINT,
    error TEXT,
    duration_ms BIGINT NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id);
