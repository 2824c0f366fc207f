-- The drift check builds one tenant's export after another: index its per-tenant reads.
CREATE INDEX IF NOT EXISTS sites_by_tenant ON sites (tenant_id);
