"""Self-check: the conformance suite every sandbox passes, and the hostile suite for docker.

Like inspect_ai's ``self_check.py``: each :class:`Case` is a tiny bundle plus what must
happen when it runs (outputs, or an exact failure reason). :data:`CONFORMANCE` runs
against every sandbox; :data:`LOCAL_KNOWN_DIFFERENCES` lists the cases where ``local``
(which does not isolate) is known to behave differently, and why. :data:`HOSTILE` runs
against ``docker`` and ``gvisor``: models that try to escape, exhaust or confuse the
sandbox; :data:`GVISOR_KNOWN_DIFFERENCES` lists where gVisor ends one differently.

Run it on a worker::

    from submission_sandbox.self_check import run_suite, CONFORMANCE
    results = run_suite("docker", CONFORMANCE, workdir=Path("/tmp/self-check"))
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox.sandbox import ResourceUsage, SandboxFailure, open_sandbox

__all__ = [
    "CONFORMANCE",
    "GOLD_MARKER",
    "GVISOR_KNOWN_DIFFERENCES",
    "HOSTILE",
    "LOCAL_KNOWN_DIFFERENCES",
    "Case",
    "CaseResult",
    "run_case",
    "run_suite",
]

#: Prefix of the gold labels the hostile suite hides on the host; a model must never see it.
GOLD_MARKER = "EVALBOARD-GOLD-"

_MANIFEST = "name: {name}\ntask: self-check\nruntime: python\nentry: handler:Model\n"
_LABELS = '["no", "yes"]'


@dataclass(frozen=True)
class Case:
    """One tiny bundle and what must come of running it."""

    name: str
    #: Body of ``predict(self, batch)``; ``batch`` is the list of inputs.
    predict: str = "return [{'label': 'yes'} for _ in batch]"
    #: Body of ``__init__(self, model_dir)``.
    init: str = "pass"
    inputs: list[dict[str, Any]] = field(
        default_factory=lambda: [{"uid": "1", "text": "a"}, {"uid": "2", "text": "b"}]
    )
    #: How many times the inputs are sent.
    requests: int = 1
    #: 0: one request at a time (``predict``); else every request through
    #: ``predict_stream`` with this many in flight, each request's uids suffixed with
    #: ``#<request number>`` so that answers out of order are caught.
    in_flight: int = 0
    #: None: every request succeeds; else the exact reason the run must end with.
    expect: FailureReason | None = None
    #: When set, each output must equal this label.
    expect_label: str | None = None
    #: Substring the failure's log tail must contain.
    expect_log: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    #: Files beside handler.py (name -> text); ``evalboard.yaml`` replaces the manifest.
    files: dict[str, str] = field(default_factory=dict)

    def write(self, directory: Path) -> Path:
        """Write the bundle under ``directory``; returns its path."""
        root = directory / self.name
        root.mkdir(parents=True, exist_ok=True)
        (root / "evalboard.yaml").write_text(_MANIFEST.format(name=self.name.replace("_", "-")))
        handler = (
            "import os, sys, json, time, socket, subprocess\n\n"
            f"LABELS = {_LABELS}\n\n"
            "class Model:\n"
            "    def __init__(self, model_dir):\n"
            f"{textwrap.indent(textwrap.dedent(self.init), ' ' * 8)}\n\n"
            "    def predict(self, batch):\n"
            f"{textwrap.indent(textwrap.dedent(self.predict), ' ' * 8)}\n"
        )
        (root / "handler.py").write_text(handler)
        for name, text in self.files.items():
            (root / name).write_text(text)
        return root


@dataclass(frozen=True)
class CaseResult:
    """What happened when one case ran in one sandbox."""

    case: str
    kind: str
    passed: bool
    reason: FailureReason | None
    detail: str
    elapsed_s: float
    usage: ResourceUsage | None = None
    log_tail: str = ""


def run_case(
    case: Case,
    kind: str,
    *,
    workdir: Path,
    base_limits: SandboxLimits | None = None,
    **options: Any,
) -> CaseResult:
    """Run one case in a fresh sandbox of ``kind`` and judge it."""
    limits = (base_limits or SandboxLimits(timeout_s=30, memory="512m")).model_copy(
        update=case.limits
    )
    bundle = case.write(workdir)
    started = time.monotonic()
    reason: FailureReason | None = None
    detail = ""
    log_tail = ""
    usage: ResourceUsage | None = None
    outputs: list[list[dict[str, Any]]] = []
    requests = [case.inputs] * case.requests
    if case.in_flight:
        requests = [
            [{**x, "uid": f"{x['uid']}#{number}"} for x in case.inputs]
            for number in range(case.requests)
        ]
    box = open_sandbox(bundle, kind=kind, limits=limits, **{**options, **case.options})
    try:
        box.start()
        if case.in_flight:
            with box.predict_stream(requests, in_flight=case.in_flight) as stream:
                outputs.extend(stream)
        else:
            outputs.extend(box.predict(inputs) for inputs in requests)
        usage = box.usage()
    except SandboxFailure as failure:
        reason, detail, log_tail = failure.reason, failure.detail, failure.log_tail
    finally:
        closing = box.close()
        usage = usage or closing
    elapsed = time.monotonic() - started
    passed = reason == case.expect
    if passed and case.expect is None:
        # Outputs that echo their input's uid must echo it in place.
        echoed = [o.get("uid") for batch in outputs for o in batch]
        sent = [x["uid"] for batch in requests[: len(outputs)] for x in batch]
        misplaced = [(u, e) for u, e in zip(sent, echoed, strict=False) if e not in (None, u)]
        passed = len(outputs) == case.requests and not misplaced
        detail = detail or f"{len(outputs)} answers of {case.requests}, misplaced {misplaced[:3]}"
    if passed and case.expect is None and case.expect_label is not None:
        got = {o.get("label") for batch in outputs for o in batch}
        passed = got == {case.expect_label}
        detail = detail or f"labels {sorted(map(str, got))}"
    if passed and case.expect_log is not None:
        passed = case.expect_log in log_tail
        detail = detail or f"log tail lacks {case.expect_log!r}"
    if not passed and not detail:
        detail = f"expected {case.expect}, got {reason}"
    return CaseResult(case.name, kind, passed, reason, detail, elapsed, usage, log_tail)


def run_suite(kind: str, cases: list[Case], *, workdir: Path, **options: Any) -> list[CaseResult]:
    """Every case in its own sandbox, in order."""
    return [run_case(case, kind, workdir=workdir, **options) for case in cases]


_ECHO = "return [{'label': 'yes', 'uid': x['uid'], 'text': x['text']} for x in batch]"
_ON_THIRD = "self.n += 1\nif self.n == 3:\n    {}\nreturn [{{'label': 'yes'}} for _ in batch]"


def _midway(name: str, third: str, expect: FailureReason, **kwargs: Any) -> Case:
    """Six requests, two in flight; the third batch runs ``third`` (where things go wrong)."""
    return Case(
        name,
        predict=_ON_THIRD.format(third),
        init="self.n = 0",
        requests=6,
        in_flight=2,
        expect=expect,
        **kwargs,
    )


#: The model writes these raw bytes on its own channel socket, past the protocol, then waits.
_SENDS = """
import gc
for obj in gc.get_objects():
    if isinstance(obj, socket.socket):
        obj.sendall({!r})
time.sleep(60)"""


def _sends(name: str, raw: bytes) -> Case:
    """A model that writes ``raw`` past the protocol: a protocol error."""
    return Case(name, predict=_SENDS.format(raw), expect=FailureReason.PROTOCOL_ERROR)


CONFORMANCE: list[Case] = [
    Case("answers", expect_label="yes", requests=3),
    Case("echoes_unicode", predict=_ECHO, inputs=[{"uid": "é", "text": 'naïve ☃ \n "q"'}]),
    Case("stdio_channel", options={"channel": "stdio"}, expect_label="yes", requests=2),
    Case("empty_batch", inputs=[]),
    Case(
        "model_prints_to_stdout",
        predict="print('debug noise'); return [{'label': 'yes'} for _ in batch]",
        expect_label="yes",
        options={"channel": "stdio"},
    ),
    Case(
        "raises",
        predict="raise ValueError('bad weights')",
        expect=FailureReason.CRASHED,
        expect_log="bad weights",
    ),
    Case(
        "fails_to_load",
        init="import not_a_module_anywhere",
        expect=FailureReason.CRASHED,
        expect_log="not_a_module_anywhere",
    ),
    Case(
        "exits_zero_midway",
        predict="sys.stderr.write('leaving\\n'); os._exit(0)",
        expect=FailureReason.PROTOCOL_ERROR,
        expect_log="leaving",
    ),
    Case(
        "crashes_halfway",
        requests=3,
        init="self.n = 0",
        predict="self.n += 1\nif self.n == 2: os._exit(3)\n"
        "return [{'label': 'yes'} for _ in batch]",
        expect=FailureReason.CRASHED,
    ),
    Case(
        "wrong_number_of_outputs",
        predict="return [{'label': 'yes'}]",
        inputs=[{"uid": "1", "text": "a"}, {"uid": "2", "text": "b"}, {"uid": "3", "text": "c"}],
        expect=FailureReason.PROTOCOL_ERROR,
    ),
    Case(
        "outputs_not_objects",
        predict="return ['yes' for _ in batch]",
        expect=FailureReason.PROTOCOL_ERROR,
    ),
    Case(
        "sleeps_forever",
        predict="time.sleep(3600)",
        limits={"timeout_s": 3},
        expect=FailureReason.TIMEOUT,
    ),
    Case(
        "hangs_at_load",
        init="time.sleep(3600)",
        limits={"timeout_s": 3},
        expect=FailureReason.TIMEOUT,
    ),
    Case(
        "huge_response",
        predict="return [{'label': 'x' * 3_000_000} for _ in batch]",
        limits={"max_output_bytes": 1_000_000},
        expect=FailureReason.OUTPUT_LIMIT,
    ),
    # Pipelined (predict_stream): order kept, and the same reasons as one at a time.
    Case("stream_keeps_order", predict=_ECHO, requests=20, in_flight=3),
    Case(
        "stream_large_both_ways",  # a 2 MB request written while a 2 MB answer comes back
        predict=_ECHO,
        inputs=[{"uid": "1", "text": "z" * 2_000_000}],
        requests=4,
        in_flight=2,
    ),
    _midway("stream_crashes_midway", "os._exit(3)", FailureReason.CRASHED),
    _midway(
        "stream_raises_midway",
        "raise ValueError('bad third batch')",
        FailureReason.CRASHED,
        expect_log="bad third batch",
    ),
    _midway(
        "stream_wrong_number_of_outputs_midway",
        "return [{'label': 'yes'}]",
        FailureReason.PROTOCOL_ERROR,
    ),
    _midway("stream_exits_zero_midway", "os._exit(0)", FailureReason.PROTOCOL_ERROR),
    _midway(
        "stream_huge_response_midway",
        "return [{'label': 'x' * 3_000_000} for _ in batch]",
        FailureReason.OUTPUT_LIMIT,
        limits={"max_output_bytes": 1_000_000},
    ),
    _midway(
        "stream_sleeps_midway", "time.sleep(3600)", FailureReason.TIMEOUT, limits={"timeout_s": 3}
    ),
    _midway(
        "stream_memory_is_limited",
        "hog = [bytearray(16 * 1024 * 1024) for _ in range(32)]",
        FailureReason.OOM,
        limits={"memory": "128m"},
    ),
    Case(
        "invalid_bundle",
        files={"evalboard.yaml": "name: x\ntask: t\nruntime: python\n"},
        expect=FailureReason.INVALID_BUNDLE,
    ),
    # Isolation: true of docker, known to be false of local (see LOCAL_KNOWN_DIFFERENCES).
    Case(
        "root_is_read_only",
        expect_label="contained",
        predict="""
        for path in ('handler_copy.py', '/opt/evil', '/etc/evil', '/root/evil', '/home/evil'):
            try:
                with open(path, 'w') as f:
                    f.write('x')
                return [{'label': 'wrote ' + path} for _ in batch]
            except OSError:
                pass
        with open('/tmp/scratch', 'w') as f:   # /tmp stays writable
            f.write('ok')
        return [{'label': 'contained'} for _ in batch]""",
    ),
    Case(
        "no_network",
        expect_label="contained",
        predict="""
        try:
            socket.create_connection(('1.1.1.1', 53), timeout=2).close()
            return [{'label': 'reached 1.1.1.1'} for _ in batch]
        except OSError:
            return [{'label': 'contained'} for _ in batch]""",
    ),
    Case(
        "memory_is_limited",
        limits={"memory": "128m"},
        expect=FailureReason.OOM,
        predict="""
        hog = [bytearray(16 * 1024 * 1024) for _ in range(32)]
        return [{'label': str(len(hog))} for _ in batch]""",
    ),
]

LOCAL_KNOWN_DIFFERENCES: dict[str, str] = {
    "root_is_read_only": "local runs as the calling user on the host's own filesystem",
    "no_network": "local shares the host's network",
    "memory_is_limited": "local sets no memory limit, so nothing is OOM-killed",
    "stream_memory_is_limited": "local sets no memory limit, so nothing is OOM-killed",
}

#: Hostile cases that end differently under ``gvisor`` (still contained: the model is
#: stopped, nothing survives, the host is untouched), and why. Every other hostile and
#: every conformance case ends exactly as under ``docker``.
GVISOR_KNOWN_DIFFERENCES: dict[str, str] = {
    "fork_bomb": "forks past the limit fail inside gVisor as under runc (RLIMIT_NPROC in "
    "gVisor's kernel), but each process the bomb holds costs the sandbox far more under "
    "runsc's ptrace platform: a stub host process per address space plus the Sentry's own "
    "state (measured: 60 idle forked Python children +430 MB under runsc, about nothing "
    "under runc), so 64 of them fill the case's 512 MiB before its 4 s wall clock (oom); "
    "with memory to spare the stubs' host threads grow instead (one per stub and Sentry "
    "thread that ran it, never freed: 4,770 host tasks after 34 s), up to the host task "
    "cap (crashed: 2 GiB and a 30 s limit ended after 9.9 s). Measured on this case: runc "
    "timeout, peak 56 MiB; gVisor oom after 4.8-5.1 s. Reading it as timeout would misname "
    "an oom",
}

# The marker is assembled at run time so that this handler's own source does not hold it.
_SCAN_FOR_GOLD = f"""
    marker = '{GOLD_MARKER[:9]}' + '{GOLD_MARKER[9:]}'
    found = []
    for key, value in os.environ.items():
        if marker in value:
            found.append('env ' + key)
    skip = ('/proc', '/sys', '/dev', '/opt/evalboard/site-python', '/usr')
    for root, dirs, files in os.walk('/'):
        if root.startswith(skip):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.getsize(path) < 1_000_000:
                    with open(path, 'rb') as f:
                        if marker.encode() in f.read():
                            found.append(path)
            except OSError:
                pass
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/' + pid + '/environ', 'rb') as f:
                if marker.encode() in f.read():
                    found.append('/proc/' + pid + '/environ')
        except OSError:
            pass
    label = 'contained' if not found else 'found ' + ','.join(found)[:200]
    return [{{'label': label}} for _ in batch]"""

HOSTILE: list[Case] = [
    Case(
        "egress_tcp",
        expect_label="contained",
        predict="""
        reached = []
        for host, port in (('1.1.1.1', 443), ('8.8.8.8', 53), ('172.17.0.1', 2375),
                           ('127.0.0.1', 2375), ('10.0.0.1', 80)):
            try:
                socket.create_connection((host, port), timeout=1).close()
                reached.append(host)
            except OSError:
                pass
        return [{'label': 'contained' if not reached else 'reached ' + ','.join(reached)}
                for _ in batch]""",
    ),
    Case(
        "egress_dns",
        expect_label="contained",
        predict="""
        try:
            socket.getaddrinfo('example.com', 80)
            return [{'label': 'resolved'} for _ in batch]
        except OSError:
            pass
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(1)
            s.sendto(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00'
                     b'\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01', ('8.8.8.8', 53))
            s.recvfrom(512)
            return [{'label': 'udp answered'} for _ in batch]
        except OSError:
            return [{'label': 'contained'} for _ in batch]""",
    ),
    Case(
        "reads_host_files",
        expect_label="contained",
        predict="""
        leaks = []
        for path in ('/var/run/docker.sock', '/run/docker.sock', '/root/.ssh', '/work',
                     '/proc/1/root/etc/shadow', '/etc/shadow', '/var/lib/docker'):
            if os.path.exists(path):
                try:
                    if os.path.isdir(path):
                        os.listdir(path)
                    else:
                        open(path, 'rb').read(1)
                    leaks.append(path)
                except OSError:
                    pass
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect('/var/run/docker.sock')
            leaks.append('docker.sock connected')
        except OSError:
            pass
        mounts = open('/proc/self/mounts').read()
        for line in mounts.splitlines():
            target = line.split()[1]
            expected = ('/', '/tmp', '/run/evalboard', '/proc', '/dev', '/sys',
                        '/sbin/docker-init', '/usr/sbin/docker-init', '/usr/bin/docker-init')
            if target not in expected and not target.startswith(('/proc/', '/dev/', '/sys/',
                                                                   '/etc/')):
                leaks.append('mount ' + target)
        return [{'label': 'contained' if not leaks else ';'.join(leaks)[:300]} for _ in batch]""",
    ),
    Case(
        "writes_outside_tmp",
        expect_label="contained",
        predict="""
        wrote = []
        for path in ('/opt/bundle/evil', '/etc/evil', '/run/evalboard/evil', '/evil',
                     '/usr/lib/evil', '/var/evil'):
            try:
                with open(path, 'w') as f:
                    f.write('x')
                wrote.append(path)
            except OSError:
                pass
        try:
            with open('/tmp/fill', 'wb') as f:    # the tmpfs is capped
                for _ in range(64):
                    f.write(b'0' * (1024 * 1024))
            wrote.append('/tmp beyond its cap')
        except OSError:
            pass
        return [{'label': 'contained' if not wrote else ','.join(wrote)} for _ in batch]""",
        limits={"tmpfs": "16m"},
    ),
    Case(
        "not_root_and_no_privileges",
        expect_label="contained",
        predict="""
        problems = []
        if os.getuid() == 0 or os.geteuid() == 0:
            problems.append('root')
        status = open('/proc/self/status').read()
        for line in status.splitlines():
            if line.startswith('CapEff:') and int(line.split()[1], 16) != 0:
                problems.append(line)
            if line.startswith('NoNewPrivs:') and line.split()[1] != '1':
                problems.append(line)
        return [{'label': 'contained' if not problems else ';'.join(problems)} for _ in batch]""",
    ),
    Case(
        "fork_bomb",
        limits={"timeout_s": 4, "pids": 64},
        expect=FailureReason.TIMEOUT,
        predict="""
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)""",
    ),
    Case(
        "memory_bomb",
        limits={"memory": "128m"},
        expect=FailureReason.OOM,
        predict="""
        hog = []
        while True:
            hog.append(bytearray(8 * 1024 * 1024))""",
    ),
    Case(
        "memory_bomb_in_child",
        limits={"memory": "128m"},
        expect=FailureReason.OOM,
        predict="""
        child = subprocess.run([sys.executable, '-c',
            'h = []\\nwhile True: h.append(bytearray(8 * 1024 * 1024))'])
        raise RuntimeError(f'the child died with {child.returncode}')""",
    ),
    Case(
        "cpu_spin_past_timeout",
        limits={"timeout_s": 3},
        expect=FailureReason.TIMEOUT,
        predict="""
        while True:
            pass""",
    ),
    Case(
        "sleeps_forever",
        limits={"timeout_s": 3},
        expect=FailureReason.TIMEOUT,
        predict="time.sleep(10**6)",
    ),
    Case(
        "floods_the_channel",
        limits={"max_output_bytes": 1_000_000},
        expect=FailureReason.OUTPUT_LIMIT,
        predict="""
        import gc
        for obj in gc.get_objects():
            if isinstance(obj, socket.socket):
                while True:
                    obj.sendall(b'x' * 65536)
        time.sleep(60)""",
    ),
    Case(
        "floods_the_log",
        expect_label="yes",
        predict="""
        chunk = 'y' * 4096 + '\\n'
        for _ in range(20000):          # about 80 MB of log
            sys.stderr.write(chunk)
        return [{'label': 'yes'} for _ in batch]""",
    ),
    _sends("malformed_response", b"{not json\n"),
    _sends("response_for_another_id", b'{"id": 999, "outputs": []}\n'),
    _sends("missing_outputs", b'{"id": 1}\n'),
    Case(
        "never_answers",
        limits={"timeout_s": 3},
        expect=FailureReason.TIMEOUT,
        predict="""
        import threading
        threading.Event().wait()""",
    ),
    Case("wrong_number_of_outputs", predict="return []", expect=FailureReason.PROTOCOL_ERROR),
    Case(
        "crash_halfway",
        requests=4,
        init="self.n = 0",
        expect=FailureReason.CRASHED,
        predict="""
        self.n += 1
        if self.n == 3:
            os.kill(os.getpid(), 11)
        return [{'label': 'yes'} for _ in batch]""",
    ),
    Case("finds_gold_labels", expect_label="contained", predict=_SCAN_FOR_GOLD),
]
