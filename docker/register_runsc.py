"""Register gVisor's runsc with the Docker engine: merge it into daemon.json.

Run by docker/bootstrap.sh (step 2b) with the system's python3 before any virtual
environment exists, so the standard library only. Two uses:

    python3 docker/register_runsc.py DAEMON_JSON RUNSC_PATH
        merge {"runtimes": {"runsc": {"path": ..., "runtimeArgs": [...]}}} into DAEMON_JSON;
        prints one line saying whether the file changed; exit 0.
    docker info --format '{{json .Runtimes}}' | python3 docker/register_runsc.py --engine-lists
        exit 0 when the engine lists runsc with every argument below, else 1.

The merge keeps every other key and every other runtime, and an existing runsc entry's
own extra arguments (an operator's --platform=systrap, --debug) and its path where that
file exists: the operator's choices stand, ours are added. When nothing would change the
file is not written at all (its bytes, mode and mtime stay). A file that is not JSON, or
not the shape dockerd reads, is refused with one line on stderr and exit 2, untouched:
dockerd would refuse it too, and overwriting it would lose the operator's settings. The
new file is written beside the old and renamed over it, so dockerd never reads half a file.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

#: The runtime's name in daemon.json (submission_sandbox.gvisor_sandbox.RUNSC).
RUNSC = "runsc"

#: What the gvisor sandbox needs runsc to run with (submission_sandbox.gvisor_sandbox.
#: RUNSC_ARGS; a test keeps the two equal): no network inside runsc (Docker 20.10 refuses
#: runsc containers otherwise: "cannot run with network enabled in root network
#: namespace"), and connecting to host unix sockets in the container's mounts, so that the
#: model reaches the channel's socket in its one bind-mounted folder, as under runc.
RUNSC_ARGS = ("--network=none", "--host-uds=open")


class InvalidDaemonJson(ValueError):
    """The operator's daemon.json cannot be merged into; the message is one line."""


def merged(config: Any, runsc_path: str) -> dict[str, Any]:
    """``config`` with runsc registered as the gvisor sandbox needs it (a new dict).

    Raises:
        InvalidDaemonJson: ``config``, its ``runtimes`` or its ``runsc`` is not an object.
    """
    if not isinstance(config, dict):
        raise InvalidDaemonJson(f"holds a JSON {type(config).__name__}, not an object")
    runtimes = config.get("runtimes", {})
    if not isinstance(runtimes, dict):
        raise InvalidDaemonJson('"runtimes" is not an object')
    entry = runtimes.get(RUNSC, {})
    if not isinstance(entry, dict):
        raise InvalidDaemonJson(f'"runtimes"."{RUNSC}" is not an object')
    args = entry.get("runtimeArgs", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise InvalidDaemonJson(f'"runtimes"."{RUNSC}"."runtimeArgs" is not a list of strings')
    path = entry.get("path")
    if not isinstance(path, str) or not os.path.isfile(path):
        path = runsc_path  # absent or stale: ours
    new_entry = {
        **entry,
        "path": path,
        "runtimeArgs": [*args, *(arg for arg in RUNSC_ARGS if arg not in args)],
    }
    return {**config, "runtimes": {**runtimes, RUNSC: new_entry}}


def register(daemon_json: str, runsc_path: str) -> bool:
    """Merge runsc into the file at ``daemon_json`` (made if absent); True if it changed.

    Raises:
        InvalidDaemonJson: the file is not JSON, or not the shape dockerd reads.
    """
    try:
        with open(daemon_json, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        text = None
    if text is None or not text.strip():
        config: Any = {}  # dockerd reads an empty file as no settings
    else:
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise InvalidDaemonJson(f"is not valid JSON ({exc})") from None
    new = merged(config, runsc_path)
    if text is not None and new == config:
        return False
    _write_atomically(daemon_json, json.dumps(new, indent=2) + "\n")
    return True


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    fd, temporary = tempfile.mkstemp(prefix=".daemon.json.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def engine_lists_runsc(runtimes: Any) -> bool:
    """Whether ``docker info``'s Runtimes hold runsc with every argument it needs."""
    entry = runtimes.get(RUNSC) if isinstance(runtimes, dict) else None
    if not isinstance(entry, dict):
        return False
    args = entry.get("runtimeArgs") or []
    return isinstance(args, list) and all(arg in args for arg in RUNSC_ARGS)


def main(argv: list[str]) -> int:
    if argv == ["--engine-lists"]:
        try:
            return 0 if engine_lists_runsc(json.load(sys.stdin)) else 1
        except ValueError:
            return 1  # no engine answering: not listed
    if len(argv) != 2 or argv[0].startswith("-"):
        print(
            "usage: register_runsc.py DAEMON_JSON RUNSC_PATH | register_runsc.py --engine-lists",
            file=sys.stderr,
        )
        return 2
    daemon_json, runsc_path = argv
    try:
        changed = register(daemon_json, runsc_path)
    except InvalidDaemonJson as exc:
        print(
            f"register_runsc: {daemon_json} {exc}; fix it by hand (left untouched), then rerun",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        print(f"register_runsc: cannot write {daemon_json}: {exc.strerror}", file=sys.stderr)
        return 2
    if changed:
        print(f"{daemon_json}: runsc registered with {' '.join(RUNSC_ARGS)} (other keys kept)")
    else:
        print(f"{daemon_json}: runsc already registered as needed (file not rewritten)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
