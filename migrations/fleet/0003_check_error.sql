-- Why the last drift check of a tenant failed (cleared by the next good check or an apply).
ALTER TABLE fleet_applied ADD COLUMN check_error TEXT;
