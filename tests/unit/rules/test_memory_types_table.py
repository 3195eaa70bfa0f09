"""The memory types' required fields are a table checked without pydantic (issue 27: the ``light``
contract keeps pydantic off consolidate.rules). ``missing_fields`` and ``required_missing`` must
answer as the six pydantic models they replace did: the same fields named, the same messages. The
models are rebuilt here, as they were, as the reference (pydantic stays a dependency of the judges).
"""

from __future__ import annotations

import pytest
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError, field_validator

from consolidate.rules.memory_types import FIELD_HINTS, TYPES, missing_fields, required_missing


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


class Preference(_Memory):
    who: str


class Recipe(_Memory):
    command: str
    context: str


class Failure(_Memory):
    symptom: str
    cause: str


MODELS: dict[str, type[_Memory]] = {"decision": Decision, "constraint": _Memory, "preference": Preference,
                                    "recipe": Recipe, "failure": Failure, "fact": _Memory}


def _reference(type_, statement, fields):
    model = MODELS.get(type_)
    if model is None:
        return f"unknown memory type {type_!r} (known: {', '.join(MODELS)})"
    try:
        model.model_validate({"statement": statement, **fields})
    except ValidationError as exc:
        names = sorted({str(e["loc"][0]) for e in exc.errors() if e.get("loc")})
        hints = "; ".join(FIELD_HINTS[n] for n in names if n in FIELD_HINTS)
        return f"a {type_} needs {', '.join(names)}" + (f" ({hints})" if hints else "")
    return None


def _reference_required(type_, fields):
    model = MODELS.get(type_)
    if model is None:
        return []
    return [name for name, f in model.model_fields.items()
            if name != "statement" and f.is_required() and not str(fields.get(name) or "").strip()]


FIELD_NAMES = ("statement", "reason", "who", "command", "context", "symptom", "cause", "extra")
#: Blank in every script's sense str.strip knows (ASCII and Unicode spaces), text of several scripts,
#: and the non-text values a judge's JSON may carry.
VALUES = st.one_of(
    st.text(alphabet=" \t\n\u00a0\u2003\u3000", max_size=4),
    st.text(max_size=12),
    st.sampled_from(["reason", "因为更快", "потому что", "  x  ", "\u200b", "ok"]),
    st.none(), st.integers(), st.booleans(), st.floats(allow_nan=False),
    st.binary(max_size=6), st.lists(st.text(max_size=3), max_size=2),
)


def test_the_table_names_the_types_of_the_models_in_their_order():
    assert list(TYPES) == list(MODELS)
    for type_, model in MODELS.items():
        assert TYPES[type_] == tuple(n for n in model.model_fields if n != "statement")


@settings(max_examples=400, deadline=None)
@given(type_=st.sampled_from([*MODELS, "Decision", "note", ""]), statement=VALUES,
       fields=st.dictionaries(st.sampled_from(FIELD_NAMES), VALUES, max_size=6))
def test_missing_fields_answers_as_the_models_did(type_, statement, fields):
    assert missing_fields(type_, statement, fields) == _reference(type_, statement, fields)


@settings(max_examples=300, deadline=None)
@given(type_=st.sampled_from([*MODELS, "unknown"]),
       fields=st.dictionaries(st.sampled_from(FIELD_NAMES), VALUES, max_size=6))
def test_required_missing_answers_as_the_models_did(type_, fields):
    assert required_missing(type_, fields) == _reference_required(type_, fields)


def test_the_reported_messages():
    assert missing_fields("recipe", "Run the build", {"command": "make"}) == (
        f"a recipe needs context ({FIELD_HINTS['context']})")
    assert missing_fields("decision", "  ", {"reason": ""}) == f"a decision needs reason, statement ({FIELD_HINTS['reason']})"
    assert missing_fields("fact", "The API is on port 8080", {}) is None
    assert missing_fields("lesson", "x", {}) == (
        "unknown memory type 'lesson' (known: decision, constraint, preference, recipe, failure, fact)")


@pytest.mark.spawns
def test_the_rules_import_no_pydantic():
    code = ("import sys; import consolidate.rules.memory_types, consolidate.rules.note_policy;"
            " print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
