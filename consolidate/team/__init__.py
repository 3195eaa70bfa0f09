"""Layer 6, a team store shared through a Chroma server."""
