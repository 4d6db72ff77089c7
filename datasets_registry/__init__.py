"""Tasks, their immutable datasets and rounds, importers and perturbations.

Names load on first use (:mod:`evalboard.core.lazy`): reading a task spec or checking an
output (``evalboard evaluate``) does not pay for the registry's database layer.
"""

from typing import TYPE_CHECKING

from evalboard.core.lazy import lazy_exports

if TYPE_CHECKING:
    from datasets_registry.examples import (
        ColumnMapping,
        canonical_jsonl,
        parse_mapping,
        sha256_of,
    )
    from datasets_registry.importers import Format, detect_format, read_rows
    from datasets_registry.outputs import (
        GOLD_FIELDS,
        BadOutput,
        LabelOutput,
        ModelOutput,
        OutputProblem,
        OutputSpec,
        SpanOutput,
        TextOutput,
        output_problems,
    )
    from datasets_registry.registry import (
        AddedDataset,
        add_dataset,
        create_task,
        derive_perturbed,
        export_examples,
        get_dataset,
        get_task,
        list_datasets,
        list_tasks,
        read_examples,
        read_inputs,
        scoring_datasets,
        set_dataset_weight,
    )
    from datasets_registry.taskspec import TaskSpec, load_task_spec, parse_task_spec


__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "datasets_registry.examples": (
            "ColumnMapping",
            "canonical_jsonl",
            "parse_mapping",
            "sha256_of",
        ),
        "datasets_registry.importers": ("Format", "detect_format", "read_rows"),
        "datasets_registry.outputs": (
            "GOLD_FIELDS",
            "BadOutput",
            "LabelOutput",
            "ModelOutput",
            "OutputProblem",
            "OutputSpec",
            "SpanOutput",
            "TextOutput",
            "output_problems",
        ),
        "datasets_registry.registry": (
            "AddedDataset",
            "add_dataset",
            "create_task",
            "derive_perturbed",
            "export_examples",
            "get_dataset",
            "get_task",
            "list_datasets",
            "list_tasks",
            "read_examples",
            "read_inputs",
            "scoring_datasets",
            "set_dataset_weight",
        ),
        "datasets_registry.taskspec": ("TaskSpec", "load_task_spec", "parse_task_spec"),
    },
)
