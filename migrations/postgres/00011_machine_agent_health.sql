-- 00011_machine_agent_health: as sqlite/00011 (docs/adr/0057). The agent's
-- version and its clock's offset from the server's.

ALTER TABLE machines ADD COLUMN agent_version TEXT
    CHECK (agent_version IS NULL OR length(agent_version) BETWEEN 1 AND 64);
ALTER TABLE machines ADD COLUMN clock_offset_ms BIGINT;
