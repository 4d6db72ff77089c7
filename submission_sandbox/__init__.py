"""submission_sandbox: bundles, offline image builds, and the sandboxes that run models.

Open a sandbox for an unpacked bundle and speak to the model through it::

    from submission_sandbox import load_bundle, open_sandbox

    with open_sandbox(bundle_dir, kind="docker", limits=limits) as box:
        outputs = box.predict([{"uid": "1", "statement": "great"}])
"""

from submission_sandbox import docker_sandbox as _docker_sandbox  # noqa: F401 - registers
from submission_sandbox import gvisor_sandbox as _gvisor_sandbox  # noqa: F401 - registers
from submission_sandbox import local_sandbox as _local_sandbox  # noqa: F401 - registers
from submission_sandbox.archive import ARCHIVE_SUFFIXES, ArchiveCaps, is_archive, unpack_archive
from submission_sandbox.build import BuiltImage, build_image
from submission_sandbox.bundle import (
    Bundle,
    bundle_digest,
    iter_bundle_files,
    load_bundle,
    package_bundle,
)
from submission_sandbox.dependencies import Dependencies
from submission_sandbox.dependencies import resolve as resolve_dependencies
from submission_sandbox.docker_sandbox import DockerSandbox, docker_client, reap_orphans
from submission_sandbox.gvisor_sandbox import (
    GVISOR_VISIBLE_DIFFERENCES,
    RUNSC_ARGS,
    GvisorSandbox,
    choose_default_sandbox,
    gvisor_available,
    run_gets_gpu,
    runsc_problem,
)
from submission_sandbox.local_sandbox import LocalSandbox
from submission_sandbox.manifest import (
    MANIFEST_NAME,
    Manifest,
    ModelCard,
    Runtime,
    check_bundle_task,
    load_manifest,
    task_mismatch,
)
from submission_sandbox.offline_run import run_offline
from submission_sandbox.sandbox import (
    ModelHello,
    Prepared,
    ResourceUsage,
    Sandbox,
    SandboxFailure,
    known_sandboxes,
    open_sandbox,
    prepare_sandbox,
    resolve_sandbox,
    sandbox,
    sandbox_alias,
)

__all__ = [
    "ARCHIVE_SUFFIXES",
    "GVISOR_VISIBLE_DIFFERENCES",
    "MANIFEST_NAME",
    "RUNSC_ARGS",
    "ArchiveCaps",
    "BuiltImage",
    "Bundle",
    "Dependencies",
    "DockerSandbox",
    "GvisorSandbox",
    "LocalSandbox",
    "Manifest",
    "ModelCard",
    "ModelHello",
    "Prepared",
    "ResourceUsage",
    "Runtime",
    "Sandbox",
    "SandboxFailure",
    "build_image",
    "bundle_digest",
    "check_bundle_task",
    "choose_default_sandbox",
    "docker_client",
    "gvisor_available",
    "is_archive",
    "iter_bundle_files",
    "known_sandboxes",
    "load_bundle",
    "load_manifest",
    "open_sandbox",
    "package_bundle",
    "prepare_sandbox",
    "reap_orphans",
    "run_offline",
    "resolve_dependencies",
    "resolve_sandbox",
    "run_gets_gpu",
    "runsc_problem",
    "sandbox",
    "sandbox_alias",
    "task_mismatch",
    "unpack_archive",
]
