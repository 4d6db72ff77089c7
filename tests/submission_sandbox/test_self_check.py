"""The conformance suite against every sandbox; the hostile suite against docker and gvisor."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.states import FailureReason
from submission_sandbox.self_check import (
    CONFORMANCE,
    GOLD_MARKER,
    GVISOR_KNOWN_DIFFERENCES,
    HOSTILE,
    LOCAL_KNOWN_DIFFERENCES,
    Case,
    run_case,
)


def _local_params() -> list[Any]:
    params = []
    for case in CONFORMANCE:
        marks = []
        if case.name in LOCAL_KNOWN_DIFFERENCES:
            # strict: if local ever stops differing, the list must be updated.
            marks.append(pytest.mark.xfail(strict=True, reason=LOCAL_KNOWN_DIFFERENCES[case.name]))
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


def _judge(result: Any) -> None:
    assert result.passed, (
        f"{result.case} in {result.kind}: {result.detail} (reason {result.reason})\n"
        f"log tail:\n{result.log_tail[-2000:]}"
    )


_STOPPED = (FailureReason.TIMEOUT, FailureReason.OOM, FailureReason.CRASHED)


def test_the_known_differences_name_real_cases() -> None:
    assert set(LOCAL_KNOWN_DIFFERENCES) <= {case.name for case in CONFORMANCE}
    assert set(GVISOR_KNOWN_DIFFERENCES) <= {case.name for case in HOSTILE}


@pytest.mark.parametrize("case", _local_params())
def test_conformance_local(case: Case, tmp_path: Path) -> None:
    _judge(run_case(case, "local", workdir=tmp_path))


@pytest.mark.docker
@pytest.mark.parametrize("case", CONFORMANCE, ids=[c.name for c in CONFORMANCE])
def test_conformance_isolating(
    case: Case, isolating_kind: str, tmp_path: Path, docker_client: Any
) -> None:
    _judge(run_case(case, isolating_kind, workdir=tmp_path, client=docker_client))


@pytest.mark.docker
@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_hostile(
    case: Case,
    isolating_kind: str,
    tmp_path: Path,
    docker_client: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Gold labels exist on the host, in this process's environment and in a file; the
    # model must find neither. The same case ends the same way (reason and all) under
    # runc and under gVisor.
    gold = tmp_path / "gold.jsonl"
    gold.write_text(f'{{"uid": "1", "label": "{GOLD_MARKER}positive"}}\n')
    monkeypatch.setenv("EVALBOARD_TEST_GOLD", f"{GOLD_MARKER}negative")
    processes_before = len(os.listdir("/proc"))
    result = run_case(case, isolating_kind, workdir=tmp_path / "bundles", client=docker_client)
    if isolating_kind == "gvisor" and case.name in GVISOR_KNOWN_DIFFERENCES:
        # Stopped all the same, by one of the platform's own limits.
        assert result.reason in _STOPPED, (result.reason, result.detail)
    else:
        _judge(result)
    # The host is unaffected: it still forks, and no process of the model survived.
    assert subprocess.run(["true"], check=False).returncode == 0
    assert len(os.listdir("/proc")) < processes_before + 50
