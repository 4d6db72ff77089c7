"""The suite file and the lineage gate's comparison, without a server: what a suite file
must be to be read, and which cases a candidate regresses on."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from evalboard.core.errors import InvalidBundle, UsageError
from leaderboard.loop import (
    CaseHistory,
    Suite,
    Verdict,
    compare_history,
    parse_suite,
    run_suite_gate,
)
from leaderboard.loop.gate import Regression
from leaderboard.loop.suite_file import (
    MAX_SUITE_BYTES,
    SuiteCase,
    SuiteDataset,
    SuiteRelease,
    SuiteVerdict,
    read_suite,
    suite_bytes,
)
from tests.helpers.tasks import SENTIMENT, sentiment_spec

TASK = sentiment_spec()
LABELS = ["negative", "neutral", "positive"]


def _suite(**changes: Any) -> Suite:
    releases = [
        SuiteRelease(id=3, lineage=3, number=1, name="v1", created_at="2026-01-01T00:00:00+00:00"),
        SuiteRelease(id=7, lineage=3, number=2, name="v2", created_at="2026-02-01T00:00:00+00:00"),
        SuiteRelease(id=9, lineage=3, number=3, name="v3", created_at="2026-03-01T00:00:00+00:00"),
    ]
    verdicts = {  # uid -> passed by releases 1, 2, 3
        "a": (True, True, False),  # lost by release 3
        "b": (True, False, False),  # lost by release 2: the latest baseline fails it too
        "c": (False, False, False),  # never passed
        "d": (False, True, True),
    }
    cases = [
        SuiteCase(
            uid=uid,
            inputs={"statement": f"example {uid}"},
            gold={"label": "positive"},
            history={
                "3": [
                    SuiteVerdict(release=r.id, passed=p)
                    for r, p in zip(releases, passed, strict=True)
                ]
            },
        )
        for uid, passed in verdicts.items()
    ]
    fields: dict[str, Any] = {
        "version": 2,
        "cut_at": "2026-03-02T00:00:00+00:00",
        "task": TASK.model_dump(mode="json"),
        "releases": releases,
        "datasets": [
            SuiteDataset(name="r1", round=1, access="scoring", sha256="0" * 64, cases=cases)
        ],
    }
    return Suite(**{**fields, **changes})


def _refused(data: bytes) -> str:
    with pytest.raises(UsageError) as caught:
        parse_suite(data, source="suite.json")
    message = caught.value.message
    assert "\n" not in message
    return message


def test_a_suite_round_trips_and_the_same_suite_is_the_same_bytes() -> None:
    data = suite_bytes(_suite())
    assert data == suite_bytes(_suite()) and data.endswith(b"\n")
    suite = parse_suite(data)
    assert suite == _suite()
    (test_set,) = suite.test_sets()
    assert test_set.examples[0] == {"uid": "a", "statement": "example a", "label": "positive"}
    histories = suite.histories(3)["r1"]
    assert histories["a"].passed_by == [3, 7] and histories["a"].lost_by == [9]
    assert histories["b"].first_passed == 3 and histories["b"].lost_by == [7]
    assert histories["c"].first_passed is None
    assert suite.lineage_of(7) == 3 and suite.lineage_of(8) is None


def test_a_changed_suite_is_refused() -> None:
    document = json.loads(suite_bytes(_suite()))
    document["datasets"][0]["cases"][1]["history"]["3"][0]["passed"] = False
    message = _refused(json.dumps(document).encode())
    assert "changed after export" in message and "export it again" in message
    del document["sha256"]
    assert "changed after export" in _refused(json.dumps(document).encode())


def _rehashed(document: dict[str, Any]) -> bytes:
    """A forged suite: changed, then hashed again as the file's format says."""
    content = {k: v for k, v in document.items() if k != "sha256"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return json.dumps({**content, "sha256": digest}).encode()


def test_what_no_server_writes_is_refused_even_when_hashed_again() -> None:
    document = json.loads(suite_bytes(_suite()))
    document["datasets"][0]["cases"][0]["inputs"]["statement"] = "nul\u0000byte"
    assert "NUL" in _refused(_rehashed(document))
    document = json.loads(suite_bytes(_suite()))
    document["task"]["output"]["type"] = "rainbow"
    assert "task spec" in _refused(_rehashed(document))
    document = json.loads(suite_bytes(_suite()))
    document["datasets"][0]["cases"][0]["gold"] = "positive"
    assert "not a valid suite file" in _refused(_rehashed(document))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x00\xff\x00garbage", "not UTF-8 JSON"),
        (b'{"format": "evalboard-suite", "format_version": 1, "x": NaN}', "not UTF-8 JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not UTF-8 JSON"),
        (b'["a list"]', "not an Evalboard suite file"),
        (b'{"format": "evalboard-snapshot"}', "not an Evalboard suite file"),
        (b'{"format": "evalboard-suite", "format_version": 7}', "format version 7"),
    ],
)
def test_a_file_that_is_no_suite_is_refused_in_one_line(data: bytes, expected: str) -> None:
    assert expected in _refused(data)


def test_a_50_mb_suite_file_is_refused_quickly(tmp_path: Path) -> None:
    bloated = json.loads(suite_bytes(_suite()))
    bloated["datasets"][0]["cases"][0]["inputs"]["statement"] = "x" * 50_000_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(bloated))
    started = time.monotonic()
    with pytest.raises(UsageError, match="changed after export"):
        read_suite(path)
    assert time.monotonic() - started < 30  # a bound against hanging, not a benchmark
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:  # sparse: the size is refused before a byte is read
        handle.truncate(MAX_SUITE_BYTES + 1)
    with pytest.raises(UsageError, match="more than a suite file's"):
        read_suite(huge)
    with pytest.raises(UsageError, match="Cannot read the suite file"):
        read_suite(tmp_path / "missing.json")


def _histories() -> dict[str, CaseHistory]:
    return {
        "u0": CaseHistory(3, (Verdict(3, True), Verdict(7, True), Verdict(9, False))),
        "u1": CaseHistory(3, (Verdict(3, True), Verdict(7, False), Verdict(9, False))),
        "u2": CaseHistory(3, (Verdict(3, False), Verdict(9, False))),
    }


def test_the_lineage_gate_fails_on_a_case_any_earlier_release_passed() -> None:
    examples = [{"uid": f"u{i}", "statement": "x", "label": "positive"} for i in range(4)]
    labels = {3: "release 1 (submission 3, v1)", 7: "release 2", 9: "release 3"}
    candidate = {
        "u0": {"label": "negative"},
        "u1": {"label": "neutral"},  # release 3, the latest, failed it too: still blocked
        "u2": {"label": "positive"},
        # u3: no output and no history: not a regression
    }
    summary, regressions = compare_history(TASK, "r1", examples, _histories(), labels, candidate)
    assert regressions == [
        Regression("r1", "u0", "positive", None, "negative", (labels[3], labels[7])),
        Regression("r1", "u1", "positive", None, "neutral", (labels[3],)),
    ]
    assert (summary.baseline_right, summary.candidate_right, summary.improvements) == (2, 1, 1)
    # A missing output of a case passed before counts as wrong.
    _, missing = compare_history(TASK, "r1", examples, _histories(), labels, {})
    assert [r.uid for r in missing] == ["u0", "u1"]


def test_the_task_spec_in_a_suite_is_the_servers() -> None:
    assert _suite().task_spec == sentiment_spec()
    assert _suite().task["id"] == SENTIMENT["id"]


def test_the_suite_gate_refuses_a_candidate_of_another_task_before_running_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "evalboard.yaml").write_text(
        "name: other\ntask: qa\nruntime: python\nentry: handler:Model\n"
    )
    (tmp_path / "handler.py").write_text("class Model: ...\n")
    with pytest.raises(InvalidBundle, match=f"model of task 'qa' .* not of task '{TASK.id}'"):
        run_suite_gate(_suite(), tmp_path, sandbox="no-such-sandbox")
