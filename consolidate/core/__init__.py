"""Layer 1, the foundation: errors, settings, files, dates, text measures. Imports nothing of the project."""
