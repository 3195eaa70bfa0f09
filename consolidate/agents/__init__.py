"""Layer 6, the agent CLIs: hooks, harvest of transcripts, file recall, install."""
