"""Layer 5, the consolidation pipeline, its stages and the operations on a store."""
