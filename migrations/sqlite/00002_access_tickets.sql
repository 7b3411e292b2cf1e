-- 00002_access_tickets: one-time access tickets as the access proxy takes
-- them. 00001's access_tickets was never written to; it is replaced rather
-- than altered: a ticket now records the attempt it was granted for (it
-- opens that run only) and who asked, and a taken ticket is deleted
-- rather than marked used, so the row's absence is what makes it
-- one-time. Dropping the table drops its index too.

DROP TABLE access_tickets;

-- Stored only as the SHA-256 (lowercase hex) of the secret in the link;
-- valid for 60 s.
CREATE TABLE access_tickets (
    ticket_sha256 TEXT NOT NULL PRIMARY KEY
        CHECK (length(ticket_sha256) = 64 AND ticket_sha256 NOT GLOB '*[^0-9a-f]*'),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    workload_id TEXT NOT NULL,
    attempt INTEGER NOT NULL CHECK (attempt >= 0),
    -- the subject that asked; not a foreign key, as for workloads.created_by
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    FOREIGN KEY (tenant_id, workload_id) REFERENCES workloads (tenant_id, id)
) STRICT;

CREATE INDEX access_tickets_expires_at ON access_tickets (expires_at);
