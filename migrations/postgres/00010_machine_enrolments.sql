-- 00010_machine_enrolments: as sqlite/00010 (docs/adr/0055). One-time
-- enrolment tokens, kept as SHA-256 only; an enrolled machine's client
-- certificate, by fingerprint.

CREATE TABLE machine_enrolments (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    token_sha256 TEXT NOT NULL UNIQUE CHECK (length(token_sha256) = 64),
    name TEXT CHECK (name IS NULL OR length(name) > 0),
    region TEXT NOT NULL CHECK (length(region) > 0),
    created_by TEXT NOT NULL CHECK (length(created_by) > 0),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    used_at TEXT CHECK (used_at IS NULL OR length(used_at) = 27),
    -- Deferred: one transaction takes the token and then makes the
    -- machine it names, with the owner and region the token fixed.
    machine_id TEXT REFERENCES machines (id) DEFERRABLE INITIALLY DEFERRED
);

CREATE INDEX machine_enrolments_tenant_id ON machine_enrolments (tenant_id);

ALTER TABLE machines ADD COLUMN cert_fingerprint TEXT
    CHECK (cert_fingerprint IS NULL OR length(cert_fingerprint) = 71);
ALTER TABLE machines ADD COLUMN cert_expires_at TEXT
    CHECK (cert_expires_at IS NULL OR length(cert_expires_at) = 27);
CREATE UNIQUE INDEX machines_cert_fingerprint ON machines (cert_fingerprint)
    WHERE cert_fingerprint IS NOT NULL;
