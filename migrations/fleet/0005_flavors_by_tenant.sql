-- Likewise for flavors (the vps module's table, so only with that module).
CREATE INDEX IF NOT EXISTS flavors_by_tenant ON flavors (tenant_id);
