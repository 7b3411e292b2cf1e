-- 00002_access_tickets: as sqlite/00002. 00001's access_tickets was never
-- written to; it is replaced rather than altered: a ticket records the
-- attempt it was granted for and who asked, and a taken ticket is deleted,
-- so the row's absence is what makes it one-time.

DROP TABLE access_tickets;

-- Stored only as the SHA-256 (lowercase hex) of the secret in the link;
-- valid for 60 s.
CREATE TABLE access_tickets (
    ticket_sha256 TEXT NOT NULL PRIMARY KEY CHECK (ticket_sha256 ~ '^[0-9a-f]{64}$'),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    workload_id TEXT NOT NULL,
    attempt BIGINT NOT NULL CHECK (attempt >= 0),
    -- the subject that asked; not a foreign key, as for workloads.created_by
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    FOREIGN KEY (tenant_id, workload_id) REFERENCES workloads (tenant_id, id)
);

CREATE INDEX access_tickets_expires_at ON access_tickets (expires_at);
