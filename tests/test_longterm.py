"""The recall index: bulk reads are paged (Chroma 1.5 fails a get of more than 32,766 rows)."""

from consolidate.longterm import LongTerm


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
