-- An agent's keys not yet revoked: a key-issue call naming the agent revokes those whose wallet
-- lost it (market/README.md, "Revocation"). Partial, so revoked keys cost the index nothing.
create index agent_keys_active_by_agent on agent_keys ((doc->>'agentId'), created_at)
  where doc->>'revokedAt' is null;
