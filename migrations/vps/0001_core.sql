-- The vps module: provider accounts and flavors.
CREATE TABLE provider_accounts (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    provider TEXT NOT NULL,
    config TEXT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);
CREATE TABLE flavors (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    pool_id TEXT NOT NULL REFERENCES pools (id),
    name TEXT NOT NULL,
    vcpu BIGINT NOT NULL,
    memory_gib BIGINT NOT NULL,
    disk_gib BIGINT NOT NULL,
    gpu BIGINT,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (pool_id, name)
);
