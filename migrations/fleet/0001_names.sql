-- The names fleet gave the sites and pools it created (they have no name of their own).
CREATE TABLE fleet_names (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    kind TEXT NOT NULL,
    object_id TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (kind, object_id)
);
CREATE INDEX fleet_names_by_tenant ON fleet_names (tenant_id, kind, name);
