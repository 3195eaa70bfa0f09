"""Layer 2, rules on text: the secret gate, the context guard, memory types, private spans."""
