"""Layer 7, evaluation: judges on labels, end-to-end replays, curation, demo."""
