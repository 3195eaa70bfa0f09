"""The store curation pass (``consolidate curate``, ``consolidate batch --curate``): the judge reads
the project's active memories in groups of related ones and keeps, drops, merges or disputes them, as
one undoable run. ``groups`` finds the groups; ``curation`` asks the judge and plans the run."""

from consolidate.pipeline.curate.curation import CurateResult, plan_curate, protected, run_curate

__all__ = ["CurateResult", "plan_curate", "protected", "run_curate"]
