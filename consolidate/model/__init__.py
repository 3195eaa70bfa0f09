"""Layer 3, the plan a run builds (notes, candidates, decisions) and its rendering."""
