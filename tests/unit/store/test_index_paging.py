"""The recall index: bulk reads are paged (Chroma 1.5 fails a get of more than 32,766 rows).

Filed before as tests/test_longterm.py.
"""

from consolidate.store.index.longterm import LongTerm


def test_bulk_reads_are_paged(store, monkeypatch):
    lt = store.longterm()
    texts = [f"Service {i} listens on port {8000 + i}" for i in range(11)]
    vecs = lt.embed(texts)
    lt.collection.upsert(ids=[f"m{i}" for i in range(11)], documents=texts, embeddings=vecs,
                         metadatas=[{"status": "active", "tier": "durable", "scope": "testproj",
                                     "confidence": "high" if i % 2 else "low"} for i in range(11)])
    monkeypatch.setattr(LongTerm, "PAGE", 3)
    calls = []
    real_get = lt.collection.get

    def counting_get(*a, **k):
        calls.append(k.get("limit"))
        return real_get(*a, **k)

    monkeypatch.setattr(lt.collection, "get", counting_get)
    assert sorted(r["id"] for r in lt.all()) == sorted(f"m{i}" for i in range(11))
    assert calls and set(calls) == {3}
    assert len(lt.active("testproj")) == 11 and len(lt.active("testproj", confidence="high")) == 5
    assert lt.counts() == {"active/durable": 11}


def test_active_filters_combine_in_every_shape(store):
    """Any mix of scope, tier, statuses and confidence is one valid filter, including a single one
    (confidence with at most one other filter failed: TypeError or KeyError on ``where["$and"]``)."""
    lt = store.longterm()
    texts = [f"Worker {i} retries {i + 1} times" for i in range(6)]
    lt.collection.upsert(ids=[f"w{i}" for i in range(6)], documents=texts, embeddings=lt.embed(texts),
                         metadatas=[{"status": "active" if i < 4 else "quarantined", "tier": "durable",
                                     "scope": "a" if i % 2 else "b", "confidence": "high" if i < 3 else "low"}
                                    for i in range(6)])
    ids = lambda rows: sorted(r["id"] for r in rows)  # noqa: E731
    assert ids(lt.active(tier=None, statuses=(), confidence="high")) == ["w0", "w1", "w2"]
    assert ids(lt.active(tier=None, statuses=())) == [f"w{i}" for i in range(6)]
    assert ids(lt.active(confidence="low")) == ["w3"]
    assert ids(lt.active("a", confidence="high")) == ["w1"]
    assert ids(lt.active("b", statuses=("active", "quarantined"), confidence="low")) == ["w4"]
