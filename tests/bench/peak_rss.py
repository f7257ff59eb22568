"""Run a module as ``__main__`` and report this process's peak RSS on exit.

``python -m tests.bench.peak_rss MODULE ARGS...`` runs ``python -m MODULE ARGS...`` in this process and,
when it exits, writes ``peak-rss-kb N`` as the last line of stderr. The figure is ``VmHWM`` from
``/proc/self/status``: the high-water mark of this program's own memory since ``exec``. (``ru_maxrss``
from ``wait4`` or ``getrusage`` would not do: Linux carries the parent's RSS at fork time into it.)
"""

from __future__ import annotations

import atexit
import runpy
import sys

MARK = "peak-rss-kb"


def vm_hwm_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def report() -> None:
    sys.stderr.write(f"\n{MARK} {vm_hwm_kb()}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    module, *args = sys.argv[1:]
    sys.argv = [module, *args]
    atexit.register(report)
    runpy.run_module(module, run_name="__main__", alter_sys=True)
