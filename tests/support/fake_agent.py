"""A stand-in agent CLI for the hook + MCP tests: it runs the hook commands that
``consolidate install-hook`` wrote into a settings.json (through a shell, JSON on stdin, as Claude
Code and Gemini CLI do) and talks to the MCP server started from the ``mcp add`` command the
install printed, over real stdio. Being one process, it is the parent of both, as a real agent is.

Usage: ``python fake_agent.py SETTINGS_JSON SESSION_ID CWD MCP_COMMAND``. Then, one command per line
on stdin, each answered by one JSON line on stdout:
  ``start``            run the SessionStart hooks; -> {"stdout": ...}
  ``note TEXT``        MCP ``note`` with no session_id; -> {"id": ...}
  ``flag TEXT``        the same with flag=true
  ``read``             MCP ``session_read`` with no session_id; -> its result
  ``compact``          run the PreCompact hooks (with the transcript at CWD/transcript.jsonl)
  ``end``              close the MCP server, run the SessionEnd hooks; -> {"codes": [...]}
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import anyio
from mcp import Client, StdioServerParameters


def run_hooks(settings: dict, event: str, payload: dict) -> list[subprocess.CompletedProcess]:
    out = []
    for group in settings.get("hooks", {}).get(event, []):
        for hook in group.get("hooks", []):
            out.append(subprocess.run(hook["command"], shell=True, input=json.dumps(payload), capture_output=True,
                                      text=True, timeout=120))
    return out


async def main() -> None:
    settings_path, sid, cwd, mcp_command = sys.argv[1:5]
    settings = json.loads(open(settings_path, encoding="utf-8").read())
    argv = shlex.split(mcp_command)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd)
    base = {"session_id": sid, "cwd": cwd, "transcript_path": f"{cwd}/transcript.jsonl"}

    def say(obj) -> None:
        print(json.dumps(obj), flush=True)

    async with Client(params, read_timeout_seconds=120) as client:
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "start":
                res = run_hooks(settings, "SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"})
                say({"stdout": "".join(r.stdout for r in res), "codes": [r.returncode for r in res]})
            elif cmd in ("note", "flag"):
                r = await client.call_tool("note", {"content": arg, "flag": cmd == "flag", "kind": "fact"})
                say({"id": r.structured_content.get("result") if not r.is_error else None,
                     "error": r.content[0].text if r.is_error else None})
            elif cmd == "read":
                r = await client.call_tool("session_read", {})
                say(r.structured_content)
            elif cmd == "compact":
                res = run_hooks(settings, "PreCompact", {**base, "hook_event_name": "PreCompact", "trigger": "auto"})
                say({"codes": [r.returncode for r in res], "count": len(res)})
            elif cmd == "end" or not cmd:
                break
    res = run_hooks(settings, "SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    say({"codes": [r.returncode for r in res], "count": len(res)})


if __name__ == "__main__":
    anyio.run(main)
