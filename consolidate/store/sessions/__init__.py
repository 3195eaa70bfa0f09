"""The session tier (SQLite): notes, ends, agents, the queue file."""
