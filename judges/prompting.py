"""The prompts every judge kind sends, rendered in one place: the judge prompt (:func:`render_prompt`),
the compare prompt of the contradiction check (:func:`render_compare_prompt`), and the structured
answer each asks for (``Verdicts``; ``Relations`` / ``CompareAnswer`` by compare prompt version).

The API judge (hosted or a local OpenAI-compatible server), the CLI judge (live, recording or
replaying a cassette) and the recorded HTTP cassettes of the tests all send these texts, so a prompt
change shows in every kind at once and a replayed cassette misses exactly when the text changed.
Templates are ``prompts/<version>.md`` (package ``consolidate.judges.prompts``), filled with ``str.format``:
``{project}``, ``{core}``, ``{notes}`` / ``{pairs}``, ``{notes_open}``, ``{notes_close}``.

Notes are data, never instructions: each is escaped onto one line (:func:`escape_note_text`) between
the lines ``<<<NOTES`` and ``NOTES>>>``.
"""

from __future__ import annotations

import json
import re
import threading
from importlib import resources
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from consolidate.core import settings
from consolidate.core.vocab import (COMPARE_RELATIONS, CONFIDENCE_LEVELS, CURATE_ACTIONS, CURATE_PROMPT_DEFAULT,
                                    CURATE_PROMPT_VERSIONS, ENTITY_RELATIONS, EVIDENCE_KINDS, MEMORY_TYPES,
                                    UPDATES, VERDICTS)

from .base import CurateMember, JudgeContext, JudgeNote
from consolidate.core.errors import ConfigError

PROMPT_VERSION = "judge-v1"
#: Judge prompt versions a user may select (``prompts/<version>.md``); see :func:`selected_prompt_version`.
PROMPT_VERSIONS = ("judge-v1", "judge-v2", "judge-v5", "judge-v7", "judge-v8", "judge-v9", "judge-v10", "judge-v11")
#: Environment variable selecting the judge prompt version of the API and CLI judges.
PROMPT_VERSION_ENV = settings.PROMPT_VERSION.name


def selected_prompt_version(version: str | None = None) -> str:
    """The judge prompt version to use: ``version`` when given, else ``$CONSOLIDATE_PROMPT_VERSION``,
    else PROMPT_VERSION. Raises ConfigError for a version with no template in ``prompts/``."""

    if version is not None and not str(version).strip():  # `--prompt-version ""`: not the default, a mistake
        raise ConfigError(f"an empty judge prompt version; versions: {', '.join(PROMPT_VERSIONS)}", judge="prompt")
    chosen = version or settings.PROMPT_VERSION.get() or PROMPT_VERSION
    if chosen not in PROMPT_VERSIONS:
        raise ConfigError(f"unknown judge prompt version {chosen!r}; versions: {', '.join(PROMPT_VERSIONS)}",
                          judge="prompt")
    return chosen


def load_prompt(version: str = PROMPT_VERSION) -> str:
    """The template text of prompt ``version`` (``prompts/<version>.md``)."""
    return resources.files("consolidate.judges.prompts").joinpath(f"{version}.md").read_text(encoding="utf-8")


#: The lines that open and close the notes block of a prompt (see :func:`render_prompt`).
NOTES_OPEN = "<<<NOTES"
NOTES_CLOSE = "NOTES>>>"
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MARKER_RUN = re.compile(r"[<>]{3,}")


def escape_note_text(text: str) -> str:
    """A note's text as one line of prompt data: a backslash is written ``\\\\``, a line break
    ``\\n``, a carriage return ``\\r``, a tab ``\\t``, any other control or line-separator character
    ``\\uXXXX``, and every ``<`` or ``>`` in a run of three or more gets a backslash (``\\<\\<\\<``),
    so a note can neither start a line of its own nor write the block markers."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 32 or ch in "\x7f\x85\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return _MARKER_RUN.sub(lambda m: "".join("\\" + c for c in m.group()), "".join(out))


def render_prompt(batch: list[JudgeNote], context: JudgeContext, version: str = PROMPT_VERSION) -> str:
    """The prompt for one batch. The notes are data, delimited and escaped: one note per line,
    ``[id] (section: ...) (kind: ...) content``, between the lines ``<<<NOTES`` and ``NOTES>>>``,
    every text escaped by :func:`escape_note_text` (so a note is always exactly one line and cannot
    close the block); the template tells the model that text inside a note is never an instruction."""
    lines = []
    for n in batch:
        head = f"[{n.id}]"
        if n.section:
            head += f" (section: {escape_note_text(n.section)})"
        if n.kind:
            head += f" (kind: {escape_note_text(n.kind)})"
        lines.append(f"{head} {escape_note_text(n.content)}")
    return load_prompt(version).format(project=context.project, core=context.core.strip() or "(none)",
                                       notes="\n".join(lines), notes_open=NOTES_OPEN, notes_close=NOTES_CLOSE)


class _ApiVerdict(BaseModel):
    id: str = Field(description="the note id exactly as given, e.g. n1")
    verdict: str = Field(description=" or ".join(VERDICTS))
    statement: Optional[str] = Field(None, description="for a keep: one standalone sentence")
    type: Optional[str] = Field(None, description="|".join(MEMORY_TYPES))
    fields: Optional[dict[str, str]] = Field(None, description="the type's required fields")
    evidence: Optional[str] = Field(None, description="|".join(EVIDENCE_KINDS))
    confidence: Optional[str] = Field(None, description="|".join(CONFIDENCE_LEVELS))
    reason: Optional[str] = Field(None, description="why, at most 12 words")
    entities: Optional[list[str]] = Field(None, description="files, packages, tools named")


class _Lenient(BaseModel):
    """A structured answer parsed leniently (every prompt's answer model subclasses it)."""

    @classmethod
    def model_validate_json(cls, json_data, **kwargs):
        """Parse leniently: llama.cpp's grammar lets raw control characters (newlines) into JSON
        strings, which pydantic's JSON parser rejects and ``json.loads(strict=False)`` reads
        (measured on these machines, ../shared/notes/local-models.md)."""
        try:
            data = json.loads(json_data)
        except ValueError:
            data = json.loads(json_data, strict=False)  # JSONDecodeError (a ValueError) names the spot
            _LENIENT.parsed = True  # read by APIJudge into the run's judge.call event
        kwargs.pop("strict", None)
        return cls.model_validate(data, **kwargs)


class Verdicts(_Lenient):
    """The structured answer asked of the model: one verdict per note."""

    verdicts: list[_ApiVerdict]


class _RelationTriple(BaseModel):
    source: str = Field(description="an entity the note names")
    relation: str = Field(description="|".join(ENTITY_RELATIONS))
    target: str = Field(description="an entity the note names")


class _ApiVerdictV9(_ApiVerdict):
    relations: Optional[list[_RelationTriple]] = Field(None, description="how the named entities relate")


class VerdictsV9(Verdicts):
    """The structured answer of prompt ``judge-v9``: one verdict per note, a keep with ``relations``."""

    verdicts: list[_ApiVerdictV9]  # type: ignore[assignment]  # pydantic: the v9 schema replaces v1's field


#: The response model of each judge prompt version whose answer differs from ``Verdicts`` (the schema is
#: part of the recorded request: the other versions' cassettes keep their schema).
JUDGE_MODELS = {"judge-v9": VerdictsV9}


def judge_model(version: str | None):
    """The response model for judge prompt ``version`` (``Verdicts`` unless JUDGE_MODELS names another)."""
    return JUDGE_MODELS.get(version or PROMPT_VERSION, Verdicts)


#: Set when the last answer on this thread needed the lenient parse (raw control characters).
_LENIENT = threading.local()


#: The compare prompt: ``contradiction-v2`` tells an update ("switched from X to Y", "now X; Y is gone",
#: "no longer") from a true conflict (issue 12); ``contradiction-v1`` (duplicate | contradicts |
#: unrelated) is kept for provenance and for its recorded cassette.
COMPARE_PROMPT_VERSION = "contradiction-v2"


def render_compare_prompt(pairs: list, context: JudgeContext, version: str = COMPARE_PROMPT_VERSION) -> str:
    """The contradiction prompt: one pair per line, ``[id] (type) NEW: ... || OLD: ...``, escaped and
    delimited like the notes of the judge prompt."""
    lines = [f"[{pid}] ({escape_note_text(p.type)}) NEW: {escape_note_text(p.new)} || OLD: {escape_note_text(p.old)}"
             for pid, p in pairs]
    return load_prompt(version).format(project=context.project, pairs="\n".join(lines),
                                       notes_open=NOTES_OPEN, notes_close=NOTES_CLOSE)


class _Relation(BaseModel):
    id: str = Field(description="the pair id exactly as given, e.g. p1")
    relation: str = Field(description=" | ".join(r for r in COMPARE_RELATIONS if r != UPDATES))
    reason: Optional[str] = Field(None, description="why, at most 12 words")


class Relations(_Lenient):
    """The structured answer of the contradiction check: one relation per pair."""

    # (prompt contradiction-v1; the docstring is the schema's description, part of the recorded request)

    relations: list[_Relation]


class _RelationV2(BaseModel):
    id: str = Field(description="the pair id exactly as given, e.g. p1")
    relation: str = Field(description=" | ".join(COMPARE_RELATIONS))
    reason: Optional[str] = Field(None, description="why, at most 12 words")


class CompareAnswer(Relations):
    """The structured answer of prompt ``contradiction-v2``: one relation per pair, ``updates``
    among them (NEW replaces OLD: something changed)."""

    relations: list[_RelationV2]  # type: ignore[assignment]  # pydantic: the v2 schema replaces v1's field


#: The response model of each compare prompt version (the schema is part of the recorded request).
COMPARE_MODELS = {"contradiction-v1": Relations, "contradiction-v2": CompareAnswer}


def compare_model(version: str):
    """The response model for compare prompt ``version`` (CompareAnswer, which knows ``updates``,
    for any other)."""
    return COMPARE_MODELS.get(version, CompareAnswer)


#: The curation prompt of ``consolidate curate`` (``prompts/<version>.md``) by default, stamped in every
#: curation event; CURATE_PROMPT_VERSIONS are those ``curate --prompt-version`` accepts.
CURATE_PROMPT_VERSION = CURATE_PROMPT_DEFAULT


def selected_curate_prompt_version(version: str | None = None) -> str:
    """The curation prompt version to use: ``version`` when given, else
    ``$CONSOLIDATE_CURATE_PROMPT_VERSION``, else CURATE_PROMPT_VERSION. Raises ConfigError for a
    version not in CURATE_PROMPT_VERSIONS."""

    given = (version or "").strip()
    if version is not None and not given:  # `--prompt-version ""`: not the default, a mistake
        raise ConfigError(f"an empty curation prompt version; versions: {', '.join(CURATE_PROMPT_VERSIONS)}",
                          judge="prompt")
    chosen = given or settings.CURATE_PROMPT_VERSION.get() or CURATE_PROMPT_VERSION
    if chosen not in CURATE_PROMPT_VERSIONS:
        where = "" if given else f"{settings.CURATE_PROMPT_VERSION.name}="
        raise ConfigError(f"{where}{chosen!r}: unknown curation prompt version; versions:"
                          f" {', '.join(CURATE_PROMPT_VERSIONS)}", judge="prompt")
    return chosen


def render_curate_prompt(members: list[CurateMember], context: JudgeContext,
                         version: str = CURATE_PROMPT_VERSION) -> str:
    """The curation prompt for one group: one member per line, ``[id] (type, evidence, last
    confirmed) statement``, every text escaped by ``escape_note_text`` (a statement is exactly one
    line and cannot close the block). Raises FileNotFoundError for a version with no template."""
    lines = []
    for m in members:
        head = ", ".join(escape_note_text(x) for x in (m.type, m.evidence or "unknown", m.last_confirmed or "unknown"))
        lines.append(f"[{m.id}] ({head}) {escape_note_text(m.statement)}")
    return load_prompt(version).format(project=context.project, core=context.core.strip() or "(none)",
                                       memories="\n".join(lines), notes_open=NOTES_OPEN, notes_close=NOTES_CLOSE)


class _ApiCurateAction(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    id: str = Field(description="the memory id exactly as given, e.g. m1")
    action: str = Field(description=" | ".join(CURATE_ACTIONS))
    into: Optional[str] = Field(None, description="for a merge: the id of the member that stays")
    with_: Optional[str] = Field(None, alias="with", description="for a conflict: the id of the other member")
    reason: Optional[str] = Field(None, description="why, at most 12 words")


class CurateAnswer(_Lenient):
    """The structured answer of the curation prompt: one action per memory of the group."""

    actions: list[_ApiCurateAction]
