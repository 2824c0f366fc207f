-- The vps module's v0.5 migration: sandbox templates.
CREATE TABLE sandbox_templates (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    pool_id TEXT NOT NULL REFERENCES pools (id),
    flavor_id TEXT NOT NULL REFERENCES flavors (id),
    image_id TEXT NOT NULL,
    env TEXT,
    network TEXT NOT NULL,
    warm TEXT,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);
