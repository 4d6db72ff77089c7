"""A bundle's requirements.txt (and wheels/): resolved on the host, cached by the resolved set.

The wheels here are written on the spot (tests/helpers/wheels.py), so the package cannot
be anywhere but in the bundle; pip still asks the reachable indexes, as it does for a user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from submission_sandbox import SandboxFailure, open_sandbox
from submission_sandbox.dependencies import resolve
from tests.helpers.wheels import make_wheel

HANDLER = """\
import evalboard_testdep


class Model:
    def __init__(self, model_dir):
        pass

    def predict(self, batch):
        label = evalboard_testdep.LABEL
        return [{"label": label, "probs": {label: 1.0}} for _ in batch]
"""
LIMITS = SandboxLimits(cpus=1, memory="1g", timeout_s=120)


def _bundle(root: Path, requirements: str, *, version: str = "1.0", name: str = "deps") -> Path:
    root.mkdir(parents=True)
    (root / "evalboard.yaml").write_text(
        f"name: {name}\ntask: sentiment\nruntime: python\nentry: handler:Model\n"
    )
    (root / "handler.py").write_text(HANDLER)
    (root / "requirements.txt").write_text(requirements)
    make_wheel(root / "wheels", "evalboard-testdep", version, 'LABEL = "positive"\n')
    return root


def _predict(bundle: Path, kind: str, **options: Any) -> list[dict[str, Any]]:
    box = open_sandbox(bundle, kind=kind, limits=LIMITS, **options)
    try:
        box.start()
        return box.predict([{"uid": "a", "statement": "fine"}])
    finally:
        box.close()


def test_the_resolved_set_is_installed_once_and_shared(tmp_path: Path) -> None:
    first = resolve(_bundle(tmp_path / "a", "evalboard-testdep==1.0\n"), cache_dir=tmp_path / "c")
    # Another bundle, another spelling of the same set: the same folder, not installed again.
    second = resolve(
        _bundle(tmp_path / "b", "# ours\nevalboard_testdep>=1\n", name="other"),
        cache_dir=tmp_path / "c",
    )
    assert first is not None and second is not None
    assert first.installed_now and not second.installed_now
    assert first.digest == second.digest and first.site == second.site
    assert first.packages == ("evalboard-testdep==1.0",)
    assert (first.site / "evalboard_testdep.py").read_text() == 'LABEL = "positive"\n'
    # A different set is a different folder.
    third = resolve(
        _bundle(tmp_path / "c2", "evalboard-testdep==2.0\n", version="2.0"),
        cache_dir=tmp_path / "c",
    )
    assert third is not None and third.digest != first.digest


def test_no_requirements_no_dependencies(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "a", "")
    (bundle / "requirements.txt").unlink()
    assert resolve(bundle, cache_dir=tmp_path / "c") is None


@pytest.mark.parametrize(
    ("requirements", "words"),
    [
        # Only 1.0 is in wheels/ and no index has the package.
        ("evalboard-testdep==2.0\n", "No matching distribution found for evalboard-testdep==2.0"),
        ("evalboard-no-such-package-anywhere==1.0\n", "No matching distribution found"),
    ],
)
def test_an_unresolvable_requirement_is_build_failed_with_pips_line(
    tmp_path: Path, requirements: str, words: str
) -> None:
    with pytest.raises(SandboxFailure) as caught:
        resolve(_bundle(tmp_path / "a", requirements), cache_dir=tmp_path / "c")
    assert caught.value.reason is FailureReason.BUILD_FAILED
    assert caught.value.detail.startswith("requirements.txt: ERROR: ")
    assert words in caught.value.detail
    assert not any((tmp_path / "c").glob("[0-9a-f]*")), "nothing half-installed is kept"


def test_a_wheel_for_another_platform_is_build_failed(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "a", "evalboard-winonly==1.0\n")
    make_wheel(bundle / "wheels", "evalboard-winonly", "1.0", "", tag="cp311-cp311-win_amd64")
    with pytest.raises(SandboxFailure) as caught:
        resolve(bundle, cache_dir=tmp_path / "c")
    assert caught.value.reason is FailureReason.BUILD_FAILED
    assert "No matching distribution found for evalboard-winonly==1.0" in caught.value.detail


@pytest.mark.parametrize(
    "line",
    [
        "-r /etc/passwd",
        "--index-url http://example.invalid/simple",
        "-e git+https://example.invalid/repo.git#egg=x",
        "evil @ file:///etc/passwd",
        "not a requirement !!",
    ],
)
def test_only_named_releases_are_read(tmp_path: Path, line: str) -> None:
    with pytest.raises(SandboxFailure) as caught:
        resolve(_bundle(tmp_path / "a", f"numpy\n{line}\n"), cache_dir=tmp_path / "c")
    assert caught.value.reason is FailureReason.INVALID_BUNDLE
    assert "requirements.txt line 2" in caught.value.detail
    assert "root:" not in caught.value.detail


def test_the_local_sandbox_puts_the_set_on_the_models_path(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "a", "evalboard-testdep==1.0\n")
    assert _predict(bundle, "local")[0]["label"] == "positive"


def test_the_local_sandbox_fails_the_build_like_docker(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "a", "evalboard-testdep==3.0\n")
    box = open_sandbox(bundle, kind="local", limits=LIMITS)
    with pytest.raises(SandboxFailure) as caught:
        box.start()
    box.close()
    assert caught.value.reason is FailureReason.BUILD_FAILED


@pytest.mark.docker
def test_docker_builds_the_set_into_a_shared_layer(tmp_path: Path, docker_client: Any) -> None:
    first = _bundle(tmp_path / "a", "evalboard-testdep==1.0\n", name="deps-a")
    assert _predict(first, "docker", client=docker_client)[0]["label"] == "positive"
    second = _bundle(tmp_path / "b", "evalboard-testdep==1.0\n", name="deps-b")
    box = open_sandbox(second, kind="docker", limits=LIMITS, client=docker_client)
    try:
        box.start()
        assert box.predict([{"uid": "a", "statement": "x"}])[0]["label"] == "positive"
        image = docker_client.images.get(box.image.tag)  # type: ignore[attr-defined]
    finally:
        box.close()
    digest = image.labels["org.evalboard.deps"]
    deps = docker_client.images.get(f"evalboard/deps:{digest[:40]}")
    # The bundle's image stands on the shared dependency image.
    assert deps.attrs["RootFS"]["Layers"][-1] in image.attrs["RootFS"]["Layers"]


@pytest.mark.docker
def test_docker_reports_pips_line_as_build_failed(tmp_path: Path, docker_client: Any) -> None:
    bundle = _bundle(tmp_path / "a", "evalboard-testdep==9.0\n")
    box = open_sandbox(bundle, kind="docker", limits=LIMITS, client=docker_client)
    with pytest.raises(SandboxFailure) as caught:
        box.start()
    box.close()
    assert caught.value.reason is FailureReason.BUILD_FAILED
    assert "No matching distribution found for evalboard-testdep==9.0" in caught.value.detail


def test_a_bundle_is_resolved_once_then_its_set_is_reused_without_pip(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "a", "evalboard-testdep==1.0\n")
    first = resolve(bundle, bundle_sha256="ab" * 32, cache_dir=tmp_path / "c")
    # pip would fail now (no such program): the second start must not call it.
    again = resolve(
        bundle, bundle_sha256="ab" * 32, cache_dir=tmp_path / "c", pip=["/nonexistent/pip"]
    )
    assert first is not None and again is not None
    assert again.digest == first.digest and not again.installed_now
