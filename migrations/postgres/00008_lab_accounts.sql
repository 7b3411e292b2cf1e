-- 00008_lab_accounts: as sqlite/00008 (docs/adr/0049). Admins, a password
-- that must be changed, and the audit trail.

ALTER TABLE users ADD COLUMN admin BIGINT NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
ALTER TABLE users ADD COLUMN password_must_change BIGINT NOT NULL DEFAULT 0
    CHECK (password_must_change IN (0, 1));

UPDATE users SET admin = 1 WHERE id = (
    SELECT users.id FROM users JOIN tenants ON tenants.id = users.tenant_id
    WHERE tenants.trusted = 1 AND users.role = 'owner'
    ORDER BY users.created_at, users.id LIMIT 1);

CREATE TABLE audit_events (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    at TEXT NOT NULL CHECK (length(at) = 27),
    -- who did it: an account's email, or "einsora-daemon account create"
    actor TEXT NOT NULL CHECK (length(actor) > 0),
    actor_user_id TEXT CHECK (actor_user_id IS NULL OR length(actor_user_id) = 36),
    action TEXT NOT NULL CHECK (length(action) > 0),
    -- what it was done to: an account's email, a class
    target TEXT NOT NULL,
    detail TEXT NOT NULL
);

CREATE INDEX audit_events_tenant_id_at ON audit_events (tenant_id, at, id);
