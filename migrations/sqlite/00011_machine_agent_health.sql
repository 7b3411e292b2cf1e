-- 00011_machine_agent_health: what a machine's agent says of itself on
-- every sync (docs/adr/0057).
--
-- - agent_version: the agent's build ("0.1.0"), at most 64 bytes; NULL
--   until an agent that sends it syncs.
-- - clock_offset_ms: the server's time on receiving the sync minus the
--   agent's time on sending it, in milliseconds (a one-way estimate: the
--   time in transit is in it); NULL until an agent that sends its clock
--   syncs.
--
-- Both are replaced on every sync, so neither outlives the agent that
-- said it.

ALTER TABLE machines ADD COLUMN agent_version TEXT
    CHECK (agent_version IS NULL OR length(agent_version) BETWEEN 1 AND 64);
ALTER TABLE machines ADD COLUMN clock_offset_ms INTEGER;
