"""The long-term index: ChromaDB, embeddings, the lexical index, reindexing."""
