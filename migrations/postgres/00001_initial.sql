-- 00001_initial: the first schema, in PostgreSQL's dialect (sqlite/00001
-- is the same version; they change together, and
-- tests/check-pg-migrations.py fails when their tables, columns or named
-- indexes differ). Never edit this file once released; add 00002_*.sql.
--
-- As in SQLite: IDs are UUID text (36 characters), times fixed-width UTC
-- text ("YYYY-MM-DDTHH:MM:SS.ffffffZ", 27 characters, so text order is time
-- order), secondary unique keys named unique indexes, and a child row that
-- belongs to a tenant refers to its parent through (tenant_id, id). SQLite's
-- INTEGER is 64-bit: BIGINT here, flags included (0 or 1, as the store
-- reads them).

CREATE TABLE tenants (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    name TEXT NOT NULL CHECK (length(name) > 0),
    trusted BIGINT NOT NULL DEFAULT 0 CHECK (trusted IN (0, 1)),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27)
);

CREATE UNIQUE INDEX tenants_name ON tenants (name);

CREATE TABLE users (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    email TEXT NOT NULL CHECK (length(email) > 0),
    display_name TEXT NOT NULL,
    -- argon2id in its encoded form; NULL for users who sign in elsewhere
    password_hash TEXT CHECK (password_hash IS NULL OR password_hash LIKE '$argon2id$%'),
    role TEXT NOT NULL CHECK (role IN ('owner', 'member')),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    disabled_at TEXT CHECK (disabled_at IS NULL OR length(disabled_at) = 27)
);

CREATE UNIQUE INDEX users_email ON users (email);
CREATE UNIQUE INDEX users_tenant_id_id ON users (tenant_id, id);

-- Tokens and sessions are stored only as SHA-256 hashes (hex).
CREATE TABLE api_tokens (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL, -- shown to the user, e.g. tsk_Ab3x
    token_sha256 TEXT NOT NULL CHECK (length(token_sha256) = 64),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    last_used_at TEXT CHECK (last_used_at IS NULL OR length(last_used_at) = 27),
    expires_at TEXT CHECK (expires_at IS NULL OR length(expires_at) = 27),
    revoked_at TEXT CHECK (revoked_at IS NULL OR length(revoked_at) = 27),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id)
);

CREATE UNIQUE INDEX api_tokens_token_sha256 ON api_tokens (token_sha256);
CREATE INDEX api_tokens_user_id ON api_tokens (user_id);

CREATE TABLE sessions (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    user_id TEXT NOT NULL,
    session_sha256 TEXT NOT NULL CHECK (length(session_sha256) = 64),
    csrf_sha256 TEXT NOT NULL CHECK (length(csrf_sha256) = 64),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    revoked_at TEXT CHECK (revoked_at IS NULL OR length(revoked_at) = 27),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id)
);

CREATE UNIQUE INDEX sessions_session_sha256 ON sessions (session_sha256);
CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

-- GPUs a tenant may hold of one class; a class without a row allows none.
CREATE TABLE quotas (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    gpu_class TEXT NOT NULL CHECK (length(gpu_class) > 0),
    gpus BIGINT NOT NULL CHECK (gpus >= 0),
    updated_at TEXT NOT NULL CHECK (length(updated_at) = 27),
    PRIMARY KEY (tenant_id, gpu_class)
);

-- Owner and region come from registration, never from the agent. The
-- inventory is JSON text: a cast that fails refuses the row, as SQLite's
-- json_valid() check does.
CREATE TABLE machines (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL CHECK (length(name) > 0),
    region TEXT NOT NULL CHECK (length(region) > 0),
    os TEXT NOT NULL CHECK (os IN ('linux', 'darwin')),
    cpus BIGINT NOT NULL CHECK (cpus >= 0),
    memory_mib BIGINT NOT NULL CHECK (memory_mib >= 0),
    sharing TEXT NOT NULL CHECK (sharing IN ('private', 'invite', 'community')),
    inventory TEXT CHECK (inventory IS NULL OR inventory::jsonb IS NOT NULL),
    last_seen_at TEXT CHECK (last_seen_at IS NULL OR length(last_seen_at) = 27),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27)
);

CREATE INDEX machines_tenant_id ON machines (tenant_id);
CREATE INDEX machines_region ON machines (region);

CREATE TABLE workloads (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    kind TEXT NOT NULL CHECK (kind IN ('notebook', 'endpoint', 'vm')),
    name TEXT NOT NULL CHECK (length(name) > 0),
    state TEXT NOT NULL CHECK (state IN ('pending', 'queued', 'provisioning', 'running',
                                         'stopping', 'stopped', 'failed', 'deleting',
                                         'deleted')),
    region TEXT NOT NULL CHECK (length(region) > 0),
    gpu_class TEXT NOT NULL CHECK (length(gpu_class) > 0), -- requested
    placed_class TEXT, -- what it runs on; NULL until admitted
    image TEXT NOT NULL,
    gpus BIGINT NOT NULL CHECK (gpus >= 0),
    -- may be another tenant's machine in a community pool
    machine_id TEXT REFERENCES machines (id),
    driver TEXT,
    attempt BIGINT NOT NULL CHECK (attempt >= 0),
    version BIGINT NOT NULL CHECK (version >= 0), -- the compare-and-swap token
    -- the subject that created it; not a foreign key, since dev and OIDC
    -- subjects have no users row
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    updated_at TEXT NOT NULL CHECK (length(updated_at) = 27)
);

CREATE UNIQUE INDEX workloads_tenant_id_id ON workloads (tenant_id, id);
CREATE INDEX workloads_tenant_id_created_at_id ON workloads (tenant_id, created_at, id);
CREATE INDEX workloads_tenant_id_gpu_class_state ON workloads (tenant_id, gpu_class, state);
CREATE INDEX workloads_region_state ON workloads (region, state);
CREATE INDEX workloads_machine_id ON workloads (machine_id);

-- The timeline. seq gives append order (an identity: SQLite's
-- AUTOINCREMENT); from_state is NULL only for the creation row; a note
-- has from_state = to_state.
CREATE TABLE workload_events (
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    workload_id TEXT NOT NULL,
    from_state TEXT CHECK (from_state IS NULL OR from_state IN (
        'pending', 'queued', 'provisioning', 'running', 'stopping', 'stopped', 'failed',
        'deleting', 'deleted')),
    to_state TEXT NOT NULL CHECK (to_state IN (
        'pending', 'queued', 'provisioning', 'running', 'stopping', 'stopped', 'failed',
        'deleting', 'deleted')),
    reason TEXT NOT NULL,
    attempt BIGINT NOT NULL CHECK (attempt >= 0),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    FOREIGN KEY (tenant_id, workload_id) REFERENCES workloads (tenant_id, id)
);

CREATE UNIQUE INDEX workload_events_id ON workload_events (id);
CREATE INDEX workload_events_workload_id_seq ON workload_events (workload_id, seq);

-- Append-only, by trigger, as in SQLite (which needs a third trigger for
-- INSERT OR REPLACE; Postgres has none, and TRUNCATE instead).
CREATE FUNCTION workload_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'workload_events is append-only';
END;
$$;

CREATE TRIGGER workload_events_no_update BEFORE UPDATE ON workload_events
    FOR EACH ROW EXECUTE FUNCTION workload_events_append_only();
CREATE TRIGGER workload_events_no_delete BEFORE DELETE ON workload_events
    FOR EACH ROW EXECUTE FUNCTION workload_events_append_only();
CREATE TRIGGER workload_events_no_truncate BEFORE TRUNCATE ON workload_events
    FOR EACH STATEMENT EXECUTE FUNCTION workload_events_append_only();

-- One-time access links (60 s), stored as SHA-256 hashes.
CREATE TABLE access_tickets (
    ticket_sha256 TEXT NOT NULL PRIMARY KEY CHECK (length(ticket_sha256) = 64),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    workload_id TEXT NOT NULL,
    -- the subject that asked; not a foreign key, as for workloads.created_by
    user_id TEXT NOT NULL,
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    used_at TEXT CHECK (used_at IS NULL OR length(used_at) = 27),
    FOREIGN KEY (tenant_id, workload_id) REFERENCES workloads (tenant_id, id)
);

CREATE INDEX access_tickets_expires_at ON access_tickets (expires_at);

-- Usage accounting (no money): one row per workload and hour.
CREATE TABLE usage_records (
    id TEXT NOT NULL PRIMARY KEY CHECK (length(id) = 36),
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    workload_id TEXT NOT NULL,
    region TEXT NOT NULL,
    gpu_class TEXT NOT NULL, -- the placed class: what actually ran
    hour_start TEXT NOT NULL CHECK (length(hour_start) = 27),
    seconds BIGINT NOT NULL CHECK (seconds BETWEEN 0 AND 3600),
    gpu_seconds BIGINT NOT NULL CHECK (gpu_seconds >= 0),
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    FOREIGN KEY (tenant_id, workload_id) REFERENCES workloads (tenant_id, id)
);

CREATE UNIQUE INDEX usage_records_workload_id_hour_start ON usage_records (workload_id, hour_start);
CREATE INDEX usage_records_tenant_id_hour_start ON usage_records (tenant_id, hour_start);

-- Named leases, so that one process at a time runs a singleton role.
CREATE TABLE leases (
    name TEXT NOT NULL PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL CHECK (length(acquired_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27)
);

-- Idempotency-Key replays: the first response is kept until it expires.
CREATE TABLE idempotency_keys (
    tenant_id TEXT NOT NULL REFERENCES tenants (id),
    key TEXT NOT NULL CHECK (length(key) > 0),
    request_sha256 TEXT NOT NULL CHECK (length(request_sha256) = 64),
    response_status BIGINT NOT NULL CHECK (response_status BETWEEN 100 AND 599),
    response_body TEXT NOT NULL,
    created_at TEXT NOT NULL CHECK (length(created_at) = 27),
    expires_at TEXT NOT NULL CHECK (length(expires_at) = 27),
    PRIMARY KEY (tenant_id, key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);
