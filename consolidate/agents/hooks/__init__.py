"""The session hooks of agent CLIs: the fast path, the full hook and their lifecycle."""
