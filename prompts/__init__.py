"""Versioned judge prompt templates (installed as ``judges.prompts``). The file name without
``.md`` is the prompt version stamped into every memory's provenance."""
