from __future__ import annotations

import submission_sandbox


def test_every_exported_name_exists_and_is_documented() -> None:
    for name in submission_sandbox.__all__:
        member = getattr(submission_sandbox, name)
        if callable(member):
            assert member.__doc__, f"{name} has no docstring"


def test_both_sandboxes_are_registered_and_only_docker_isolates() -> None:
    assert {"docker", "local"} <= set(submission_sandbox.known_sandboxes())
    assert submission_sandbox.DockerSandbox.isolating is True
    assert submission_sandbox.LocalSandbox.isolating is False
