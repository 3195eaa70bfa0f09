"""Memory types and their required fields (SPEC section 6), as pydantic models, and the
memorability rules the code can check.

| type       | required besides the statement |
|------------|--------------------------------|
| decision   | reason                         |
| constraint | (none)                         |
| preference | who (holds the preference)     |
| recipe     | command, context (where it worked) |
| failure    | symptom, cause                 |
| fact       | (none)                         |
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ValidationError, field_validator


class _Memory(BaseModel):
    statement: str

    @field_validator("*")
    @classmethod
    def _not_blank(cls, v):
        if isinstance(v, str) and not v.strip():
            raise ValueError("must not be empty")
        return v


class Decision(_Memory):
    reason: str


class Constraint(_Memory):
    pass


class Preference(_Memory):
    who: str


class Recipe(_Memory):
    command: str
    context: str


class Failure(_Memory):
    symptom: str
    cause: str


class Fact(_Memory):
    pass


TYPES: dict[str, type[_Memory]] = {
    "decision": Decision, "constraint": Constraint, "preference": Preference,
    "recipe": Recipe, "failure": Failure, "fact": Fact,
}


def missing_fields(type_: str, statement: str, fields: dict[str, str]) -> str | None:
    """None when ``fields`` hold what ``type_`` requires; else a one-line reason naming what is
    missing (or that the type is unknown)."""
    model = TYPES.get(type_)
    if model is None:
        return f"unknown memory type {type_!r} (known: {', '.join(TYPES)})"
    try:
        model.model_validate({"statement": statement, **fields})
    except ValidationError as exc:
        names = sorted({str(e["loc"][0]) for e in exc.errors() if e.get("loc")})
        return f"a {type_} needs {', '.join(names)}"
    return None


#: Words that introduce a reason, in the languages of the real notes (en, es, pt, fr, de, ru, ja,
#: zh, ar): a flagged decision's reason is what follows.
_BECAUSE = re.compile(r"\b(?:because|since|so that|due to|porque|pois|parce que|car|weil|потому что|так как)\b"
                      r"|(?:因为|由于|ので|から|ため|لأن)", re.IGNORECASE)
_CAUSE = re.compile(r"\b(?:because|caused by|due to|root cause)\b", re.IGNORECASE)
_CMD = re.compile(r"`([^`\n]{2,300})`")


def fields_from_text(type_: str, text: str, metadata: dict | None = None) -> dict[str, str]:
    """Best-effort required fields for a flagged note, which has no judge to fill them: note metadata
    of the same name first (``reason``, ``who``, ``command``, ``context``, ``symptom``, ``cause``),
    then the wording ("X because Y" gives a decision's reason, a backticked command a recipe's).
    Fields it cannot find stay absent, so the write policy rejects the note with the reason."""
    meta = metadata or {}
    out = {k: str(meta[k]) for k in ("reason", "who", "command", "context", "symptom", "cause") if meta.get(k)}
    if type_ == "decision" and "reason" not in out and (m := _BECAUSE.search(text)):
        out["reason"] = text[m.start():].strip()
    if type_ == "failure" and (m := _CAUSE.search(text)):
        out.setdefault("symptom", text[:m.start()].strip(" ,.;:-") or text)
        out.setdefault("cause", text[m.start():].strip())
    if type_ == "recipe" and "command" not in out and (m := _CMD.search(text)):
        out["command"] = m.group(1)
        out.setdefault("context", text)
    if type_ == "preference":
        out.setdefault("who", str(meta.get("author") or "user"))
    return out


# -- memorability rules the code can check --------------------------------------------------------

MIN_STATEMENT_CHARS = 12
_BARE_NUMBER = re.compile(r"^[\s$€£#~≈<>=+-]*\d[\d\s.,:%/x-]*[a-zA-Z%]{0,3}\s*$")
_BARE_URL = re.compile(r"^\s*<?(?:https?|ftp|file)://\S+>?\s*$", re.IGNORECASE)
_BARE_PATH = re.compile(r"^\s*`?(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*`?\s*$|^\s*`?[\w.-]+\.[A-Za-z0-9]{1,5}`?\s*$")
_TASK_LINE = re.compile(
    r"^\s*(?:[-*+]\s*)?(?:\[[ xX~]\]|✅|☑️?|✔️?|⬜|🔄|⏳|🚧|❌)|^\s*(?:TODO|FIXME|WIP|DONE|Next( steps?)?|Status|Progress|Current (?:task|status|focus))\s*[:\-]",
    re.IGNORECASE)


def memorability_problem(statement: str) -> str | None:
    """None when ``statement`` passes the rules the code can check; else the reason it is not
    memorable: too short, a bare number, URL or path, or a task-list / status line."""
    s = statement.strip()
    if _BARE_NUMBER.match(s):
        return "a bare number"
    if _BARE_URL.match(s):
        return "a bare URL"
    if _BARE_PATH.match(s):
        return "a bare path"
    if _TASK_LINE.match(s):
        return "a task-list or status line"
    if len(s) < MIN_STATEMENT_CHARS or len(s.split()) < 3 and not _CMD.search(s):
        return f"too short to stand alone ({len(s)} characters)"
    return None


_TEMPORARY = re.compile(
    r"\b(?:for now|right now|currently|at the moment|this run|this session|today|temporar(?:y|ily)|for this test)\b",
    re.IGNORECASE)
TRANSIENT_MAX_CHARS = 40


def durability(statement: str, *, confidence: str, had_ttl: bool) -> tuple[str, str]:
    """Deterministic durability classifier: (``durable`` | ``transient``, reason).

    Transient: a note written with a TTL (the agent said it expires), temporary wording ("for now",
    "this session", ...), or a very short statement (under TRANSIENT_MAX_CHARS characters) that is
    not high-confidence."""
    if had_ttl:
        return "transient", "written with a TTL"
    if m := _TEMPORARY.search(statement):
        return "transient", f"temporary wording ({m.group(0)!r})"
    if len(statement.strip()) < TRANSIENT_MAX_CHARS and confidence != "high":
        return "transient", f"very short ({len(statement.strip())} characters) and not high-confidence"
    return "durable", "standalone statement"


def normalize(text: str) -> str:
    """Text for exact-duplicate comparison: lower case, punctuation and spacing folded."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
