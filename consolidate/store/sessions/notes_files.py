"""The notes files of the session tier (consolidate/model/notes_files.py): what a session says the notes
file an agent edits holds at its end, and each file's state at its last consolidated hand-over. Mixed
into :class:`consolidate.store.sessions.tier.SessionTier` (its connection, transactions and note writes);
the SQL is consolidate/store/sessions/tables.py's."""

from __future__ import annotations

import time
import unicodedata
from typing import Any, Iterable

from consolidate.core.errors import BadInput
from consolidate.core.normal import blank
from consolidate.model.notes_files import MAX_SOURCE_FILE_CHARS, note_digest
from consolidate.rules import persisted
from consolidate.store.sessions import tables as session_tables
from consolidate.store.sessions.write_gate import secret_gate_at_write


class NotesFilesMixin:
    """The notes-file methods of SessionTier (``self.db``, ``self._transaction``, ``self.add_note``,
    ``self.refuse_notes_to_a_failure`` are SessionTier's)."""

    db: Any
    _transaction: Any
    add_note: Any
    refuse_notes_to_a_failure: Any
    _check_session_id: Any

    def add_notes_file(self, session_id: str, source_file: str, notes: Iterable[str], *, scope: str = "default",
                       add_new: bool = False, now: float | None = None) -> dict[str, Any]:
        """Record what the notes file ``source_file`` (its name as the notes' ``source_file`` metadata
        gives it, e.g. ``memory-bank/progress.md``) holds at the end of ``session_id``: ``notes``, its
        notes as they stand (consolidate/model/notes_files.py). The session's run withdraws the
        memories of ``scope`` made from notes of the file that it no longer holds. ``add_new``: the
        notes the file did not hold at its last snapshot a run applied are also added to the session (metadata
        ``source_file``), so a harness can hand the whole file over at every session end; handed over
        again in the session, the notes of the file the session holds that it no longer does are deleted.

        Each note is read as :meth:`add_note` stores it (secret material redacted) before its digest
        is taken. Returns ``{"name": the name as recorded (secrets and private spans redacted), "notes": in
        the file, "new": added}``. Raises BadInput for an empty or
        over-long ``source_file`` or a note that is not a string (nothing is recorded then)."""
        sid = self._check_session_id(session_id)
        if not isinstance(source_file, str) or not source_file.strip() or len(source_file) > MAX_SOURCE_FILE_CHARS \
                or any(unicodedata.category(c) == "Cc" for c in source_file):
            raise BadInput(f"a notes file needs a name of 1 to {MAX_SOURCE_FILE_CHARS} characters and no control"
                           f" character, got {source_file!r:.80}")
        source_file = persisted.gate(source_file, key="source_file")  # a name is free text: no secret, no private span
        texts = list(notes)
        if not all(isinstance(t, str) for t in texts):
            raise BadInput("the notes of a notes file are strings")
        texts = [t for t in texts if not blank(t)]
        stored = [secret_gate_at_write(t, None)[0] for t in texts]
        digests = [note_digest(t) for t in stored]
        now = time.time() if now is None else now
        added = 0
        gone: list[int] = []
        session_tables.ensure_notes_files(self.db)
        with self._transaction():
            self.refuse_notes_to_a_failure(sid)
            if add_new:
                before = session_tables.notes_file_state(self.db, scope, source_file)
                # handed over again in the session: a note is added once, and one the file no longer holds goes
                mine = {i: note_digest(c) for i, c in session_tables.notes_of_file(self.db, sid, source_file).items()}
                gone = [i for i, d in mine.items() if d not in set(digests)]
                session_tables.drop_notes(self.db, gone)
                before |= set(mine.values())
                for text, d in zip(texts, digests):
                    if d not in before:
                        before.add(d)
                        self.add_note(sid, text, metadata={"source_file": source_file}, now=now)
                        added += 1
            session_tables.record_notes_file(self.db, scope, sid, source_file, digests, now)
        return {"name": source_file, "notes": len(set(digests)), "new": added, "gone": len(gone) if add_new else 0}

    def notes_files(self, session_id: str) -> dict[str, list[str]]:
        """``{source_file: [note digest, ...]}``: the notes files recorded for the session (:meth:`add_notes_file`)."""
        return session_tables.notes_files(self.db, session_id)

    def settle_notes_files(self, session_id: str, scope: str, run_id: str, added: dict[str, list[str]], *,
                           now: float | None = None) -> None:
        """The session's run ``run_id`` applied its notes-file snapshots: they become the files' state in
        ``scope`` (what :meth:`add_notes_file` tells new notes by), ``added`` (``{file: [digest, ...]}``,
        the notes the run took from each file) is kept for its undo, and the session's rows go."""
        session_tables.settle_notes_files(self.db, scope, session_id, run_id, added,
                                          time.time() if now is None else now)

    def unsettle_notes_files(self, run_id: str) -> int:
        """``run_id`` was undone: the notes it took from notes files are new again to their next
        hand-over. Returns how many files' states changed."""
        return session_tables.unsettle_notes_files(self.db, run_id)

    def notes_file_times(self, session_id: str | None = None, scope: str | None = None) -> dict[str, float]:
        """``{source_file: recorded_at}``: when the session's hand-overs were recorded, or (``scope``)
        when each file's state was."""
        return session_tables.notes_file_times(self.db, session_id, scope)

    def notes_file_states(self, scope: str) -> dict[str, set[str]]:
        """``{source_file: {digest, ...}}``: what every notes file of ``scope`` held at its last
        consolidated hand-over."""
        return session_tables.notes_file_states(self.db, scope)
