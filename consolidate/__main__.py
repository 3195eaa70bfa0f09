import os
import sys

from consolidate.core.settings import WORKER_AFTER

if WORKER_AFTER.raw() is not None:  # a worker a session-end hook started: that hook finishes first
    from consolidate.pipeline.worker import wait_for_hook

    wait_for_hook(os.environ.pop(WORKER_AFTER.name, ""))

from consolidate.cli.main import main  # noqa: E402 - after the wait: the imports would compete with the hook for the CPU

sys.exit(main())
