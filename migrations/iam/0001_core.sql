-- Identity: tenants, principals (users and service accounts), API keys, grants, audit.
-- Written in the SQL that SQLite and PostgreSQL both accept; times are Unix milliseconds.
CREATE TABLE tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE principals (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    principal_id TEXT NOT NULL REFERENCES principals (id),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    hash TEXT NOT NULL,
    revoked_at BIGINT,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    principal_id TEXT NOT NULL REFERENCES principals (id),
    permission TEXT NOT NULL,
    scope TEXT NOT NULL,
    revision BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (principal_id, permission, scope)
);
CREATE TABLE audit (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    principal_id TEXT,
    method TEXT NOT NULL,
    outcome TEXT NOT NULL,
    object_id TEXT,
    details TEXT,
    at BIGINT NOT NULL
);
CREATE INDEX audit_by_tenant ON audit (tenant_id, id);
