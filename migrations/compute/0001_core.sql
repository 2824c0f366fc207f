-- Compute: sites, pools, their owner quotas and offers.
CREATE TABLE sites (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    kind TEXT NOT NULL,
    region TEXT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE pools (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    site_id TEXT NOT NULL REFERENCES sites (id),
    class TEXT NOT NULL,
    gpu_model TEXT,
    provider_account_id TEXT,
    policy TEXT,
    archived BIGINT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX pools_by_tenant ON pools (tenant_id);
CREATE TABLE pool_owner_quotas (
    pool_id TEXT NOT NULL REFERENCES pools (id),
    resource TEXT NOT NULL,
    max_value BIGINT NOT NULL,
    revision BIGINT NOT NULL,
    PRIMARY KEY (pool_id, resource)
);
CREATE TABLE pool_offers (
    pool_id TEXT NOT NULL REFERENCES pools (id),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    quota TEXT NOT NULL,
    priority BIGINT,
    revision BIGINT NOT NULL,
    PRIMARY KEY (pool_id, tenant_id)
);
CREATE INDEX pool_offers_by_tenant ON pool_offers (tenant_id);
