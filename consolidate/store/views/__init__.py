"""Derived files of the store: NOTES.md, the context file, the start file."""
