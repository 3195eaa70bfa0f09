"""Layer 4, the store folder: the session tier, the long-term index, the graph, journal and views."""
