"""Layer 8, the command line."""
