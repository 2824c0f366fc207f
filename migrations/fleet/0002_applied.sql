-- The last document applied per tenant, and the drift found by the last check.
CREATE TABLE fleet_applied (
    tenant_id TEXT PRIMARY KEY REFERENCES tenants (id),
    document TEXT NOT NULL,
    prune BIGINT NOT NULL,
    plan_hash TEXT NOT NULL,
    applied_by TEXT NOT NULL,
    applied_at BIGINT NOT NULL,
    checked_at BIGINT,
    drift TEXT
);
