-- 00008_lab_accounts: a Lab's people (docs/adr/0049).
--
-- - Admins: a flag on the account, across tenants, not a tenant role
--   (owner and member stay what they are inside a tenant). The Solo owner
--   made at first run, the first owner of a trusted tenant, is the first
--   admin; a database with no such account gets one from
--   `einsora-daemon account create --admin`.
-- - A password an admin reset must be changed at the next sign-in.
-- - The audit trail: what admins (and the daemon's own commands) changed,
--   in the tenant it concerns, never with a secret in it.

ALTER TABLE users ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
ALTER TABLE users ADD COLUMN password_must_change INTEGER NOT NULL DEFAULT 0
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
) STRICT;

CREATE INDEX audit_events_tenant_id_at ON audit_events (tenant_id, at, id);
