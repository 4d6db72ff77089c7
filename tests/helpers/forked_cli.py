"""Many ``evalboard`` command lines from one interpreter that loads the CLI once.

A subprocess imports ``evalboard.cli`` as the console script does, then forks one child
per command line (as many at once as the machine has cores); each child runs the console
script's own entry (``entry()``, with its ``sys.argv``) with its stdin, stdout and stderr
on fresh files, as a process of its own would. What a case costs is then the command's
work, not the interpreter's start-up (tests/cli/test_startup.py measures that).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Ran", "run_forked"]

_PARENT = r"""
import json, os, sys, tempfile
from evalboard.cli import entry

executable, cases = json.load(sys.stdin)


def child(argv, out, err):
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (out.fileno(), 1), (err.fileno(), 2)):
        os.dup2(source, target)
    sys.stdin = open(0, closefd=False)
    sys.argv = [executable, *argv]
    code = 0
    try:
        entry()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


results, running, pending = [None] * len(cases), {}, list(enumerate(cases))
while pending or running:
    while pending and len(running) < max(2, os.cpu_count() or 2):
        index, argv = pending.pop(0)
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:
            child(argv, out, err)
        running[pid] = (index, out, err)
    pid, status = os.wait()
    index, *files = running.pop(pid)
    texts = []
    for handle in files:
        handle.seek(0)
        texts.append(handle.read().decode(errors="replace"))
        handle.close()
    results[index] = [os.waitstatus_to_exitcode(status), *texts]
json.dump(results, sys.__stdout__)
"""


@dataclass(frozen=True)
class Ran:
    """What one command line did, as ``subprocess.CompletedProcess`` names it."""

    returncode: int
    stdout: str
    stderr: str


def run_forked(
    cases: Sequence[Sequence[str]], *, env: Mapping[str, str], executable: str, timeout: float
) -> list[Ran]:
    """Run each command line (without the program's name) and return what each did."""
    parent = subprocess.run(
        [sys.executable, "-c", _PARENT],
        input=json.dumps([executable, [list(argv) for argv in cases]]),
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=True,
    )
    return [Ran(code, out, err) for code, out, err in json.loads(parent.stdout)]
