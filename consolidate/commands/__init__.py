"""CLI commands, one module per group. Each module has ``register(sub, common)`` that adds its
sub-parsers (with ``parents=[common]`` for the store options) and sets ``func`` to a function
``(args) -> exit code``. To add a command: write a module here and add its name to ``MODULES``."""

MODULES = ("session", "workspace_cmd", "run", "read", "demo", "lifecycle", "eval_cmd", "judges_cmd", "mcp_cmd", "install_cmd", "memory_cmd",
           "team_cmd",
           "review_cmd", "share_cmd",
           "transcripts_cmd")
