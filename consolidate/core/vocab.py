"""The closed word lists of the project, one copy each (issue 27, structure-v2 rule 4).

Every module that names more than one word of a list takes the list (or the word) from here, so
that a word added or renamed here is known everywhere at once; ``tests/unit/core/test_vocab.py`` walks the
other modules' literals and fails on a tuple, list, set or dict holding two or more words of one
list. The prompts under ``prompts/`` are text sent to a model and keep their own wording; the
judges' answer schemas (``consolidate.judges.prompting``) are built from the tuples here, byte for byte as they
were written before (a recorded cassette is keyed on the exact request).

Standard library only, and nothing beyond builtins: the session-end fast hook imports it.

Lists (all tuples of ``str``, in the order the docs and the CLI show them):

- :data:`MEMORY_TYPES`: the six memory types (docs/design.md#memory-types); a note's ``kind``
  names one of them (:data:`NOTE_KINDS`).
- :data:`EVIDENCE_KINDS` and :data:`EVIDENCE_RANK` (user-stated > observed > inferred).
- :data:`CONFIDENCE_LEVELS`, weakest first, and :data:`CONFIDENCE_RANK`.
- :data:`MEMORY_STATUSES` and its named groups (:data:`LIVE_STATUSES`, :data:`RECALLED_STATUSES`,
  :data:`ENDED_STATUSES`, :data:`REVIEW_STATUSES`) and the statuses of a removed record
  (:data:`REMOVED_STATUSES`).
- :data:`VERDICTS`: a judge's answer for one note; :data:`CURATE_ACTIONS`: the curation pass's
  answer for one stored memory.
- :data:`COMPARE_RELATIONS` and :data:`COMPARE_ALIASES`: the contradiction check's answer for one pair.
- :data:`ENTITY_RELATIONS` and :data:`RELATION_ALIASES`: relations between the entities a memory
  names (consolidate/store/relations.py).
- :data:`SESSION_OUTCOMES`: how a session ended; :data:`END_PENDING`: the statuses of a session end
  not processed yet.
"""

from __future__ import annotations

# -- memory types (docs/design.md#memory-types) -------------------------------------------------
DECISION, CONSTRAINT, PREFERENCE, RECIPE, FAILURE, FACT = (
    "decision", "constraint", "preference", "recipe", "failure", "fact")
#: The six memory types, in the order the docs list them.
MEMORY_TYPES: tuple[str, ...] = (DECISION, CONSTRAINT, PREFERENCE, RECIPE, FAILURE, FACT)
#: The kinds a session note may name: the memory type it proposes.
NOTE_KINDS: tuple[str, ...] = MEMORY_TYPES

# -- evidence (docs/design.md#evidence-and-confidence) ------------------------------------------
USER_STATED, OBSERVED_SUCCESS, OBSERVED_FAILURE, INFERRED = (
    "user-stated", "observed-success", "observed-failure", "inferred")
#: The evidence kinds, strongest first.
EVIDENCE_KINDS: tuple[str, ...] = (USER_STATED, OBSERVED_SUCCESS, OBSERVED_FAILURE, INFERRED)
#: Rank of each evidence kind: user-stated 2 > observed (success or failure) 1 > inferred 0.
EVIDENCE_RANK: dict[str, int] = {INFERRED: 0, OBSERVED_FAILURE: 1, OBSERVED_SUCCESS: 1, USER_STATED: 2}

# -- confidence ----------------------------------------------------------------------------------
LOW, MEDIUM, HIGH = "low", "medium", "high"
#: The confidence levels, weakest first (a step up or down moves one place).
CONFIDENCE_LEVELS: tuple[str, ...] = (LOW, MEDIUM, HIGH)
#: Rank of each confidence level: low 0, medium 1, high 2.
CONFIDENCE_RANK: dict[str, int] = {level: i for i, level in enumerate(CONFIDENCE_LEVELS)}

# -- memory statuses -----------------------------------------------------------------------------
ACTIVE, DISPUTED, QUARANTINED, SUPERSEDED, EXPIRED = "active", "disputed", "quarantined", "superseded", "expired"
#: The statuses of a memory held in the long-term index.
MEMORY_STATUSES: tuple[str, ...] = (ACTIVE, DISPUTED, QUARANTINED, SUPERSEDED, EXPIRED)
#: Held and not ended: what the index serves to the write path, doctor and the team replica.
LIVE_STATUSES: tuple[str, ...] = (ACTIVE, QUARANTINED, DISPUTED)
#: What recall, context.md and the agent see (a quarantined memory waits for review).
RECALLED_STATUSES: tuple[str, ...] = (ACTIVE, DISPUTED)
#: Ended at a date, still shown by an as-of recall (consolidate/model/validity.py).
ENDED_STATUSES: tuple[str, ...] = (SUPERSEDED, EXPIRED)
#: Waiting for a reviewer's decision (``consolidate review``).
REVIEW_STATUSES: tuple[str, ...] = (DISPUTED, QUARANTINED)
ARCHIVED, REJUDGED_OUT, UNDONE, FORGOTTEN, DELETED, DECLINED, CURATED_OUT = (
    "archived", "rejudged-out", "undone", "forgotten", "deleted", "declined", "curated-out")
#: The statuses of a record taken out of the index (archived by an update, rejudged out, undone,
#: forgotten, deleted as a tombstone, declined in review, dropped as junk by ``consolidate curate``).
REMOVED_STATUSES: tuple[str, ...] = (ARCHIVED, REJUDGED_OUT, UNDONE, FORGOTTEN, DELETED, DECLINED, CURATED_OUT)

# -- a judge's answers ---------------------------------------------------------------------------
KEEP, DROP = "keep", "drop"
#: A judge's verdict for one note.
VERDICTS: tuple[str, ...] = (KEEP, DROP)
MERGE, CONFLICT = "merge", "conflict"
#: The curation pass's answer for one stored memory (consolidate curate, prompts/curate-v5.md).
CURATE_ACTIONS: tuple[str, ...] = (KEEP, DROP, MERGE, CONFLICT)
#: The curation prompt versions (``prompts/<version>.md``) and the default (docs/curate.md, "Prompt versions").
CURATE_PROMPT_VERSIONS: tuple[str, ...] = ("curate-v1", "curate-v2", "curate-v3", "curate-v4", "curate-v5")
CURATE_PROMPT_DEFAULT = "curate-v5"
#: The contradiction check's answer for a pair (NEW, OLD): ``updates`` since prompt contradiction-v2.
DUPLICATE, UPDATES, CONTRADICTS, UNRELATED = "duplicate", "updates", "contradicts", "unrelated"
COMPARE_RELATIONS: tuple[str, ...] = (DUPLICATE, UPDATES, CONTRADICTS, UNRELATED)
#: Other spellings of a compare relation a model may answer (``update`` for ``updates``, ...).
COMPARE_ALIASES: dict[str, str] = {
    "update": UPDATES, "updated": UPDATES, "replaces": UPDATES, "supersedes": UPDATES,
    "contradict": CONTRADICTS, "contradiction": CONTRADICTS, "conflict": CONTRADICTS,
    "conflicts": CONTRADICTS, "same": DUPLICATE, "duplicates": DUPLICATE}

# -- entity relations (consolidate/store/relations.py) ------------------------------------------
DEPENDS_ON, USES, PART_OF, REPLACES, CONFLICTS_WITH = "depends_on", "uses", "part_of", "replaces", "conflicts_with"
#: The relations a memory may state between the entities it names.
ENTITY_RELATIONS: tuple[str, ...] = (DEPENDS_ON, USES, PART_OF, REPLACES, CONFLICTS_WITH)
#: Other words a judge writes for one of ENTITY_RELATIONS, read as that relation.
RELATION_ALIASES: dict[str, str] = {
    "depends": DEPENDS_ON, "requires": DEPENDS_ON, "needs": DEPENDS_ON, "relies_on": DEPENDS_ON,
    "use": USES, "belongs_to": PART_OF, "component_of": PART_OF, "supersedes": REPLACES, "replaced": REPLACES,
    "conflicts": CONFLICTS_WITH, "incompatible_with": CONFLICTS_WITH}

# -- sessions ------------------------------------------------------------------------------------
SUCCESS, ABORTED = "success", "aborted"
#: How a session ended (``consolidate session end --outcome``, the hooks, the workspace).
SESSION_OUTCOMES: tuple[str, ...] = (SUCCESS, FAILURE, ABORTED)
QUEUED, RUNNING = "queued", "running"
#: The statuses of a session end waiting for (or in) its run.
END_PENDING: tuple[str, ...] = (QUEUED, RUNNING)
