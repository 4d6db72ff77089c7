"""Perturbed copies of datasets: ``robustness-<name>`` and ``fairness-<name>``.

>>> from datasets_registry.perturbations import perturb_dataset
>>> rows = [{"uid": "1", "sentence": "She loved her meal.", "label": "positive"}]
>>> perturb_dataset(rows, family="fairness", text_fields=["sentence"])
[{'uid': 'fairness-1', 'sentence': 'He loved his meal.', 'label': 'positive',
  'input_id': '1', 'perturbation': 'gender'}]

See docs/perturbations.md for what each family changes and why.
"""

from datasets_registry.perturbations import fairness, robustness  # noqa: F401 (registers)
from datasets_registry.perturbations.dataset import (
    FAMILY_PERTURBATIONS,
    PERTURBATION_FAMILIES,
    fingerprint,
    perturb_dataset,
    perturb_example,
)
from datasets_registry.perturbations.transform import (
    ExampleScope,
    Perturbation,
    get_perturbation,
    known_perturbations,
    perturbation,
)

__all__ = [
    "FAMILY_PERTURBATIONS",
    "PERTURBATION_FAMILIES",
    "ExampleScope",
    "Perturbation",
    "fingerprint",
    "get_perturbation",
    "known_perturbations",
    "perturb_dataset",
    "perturb_example",
    "perturbation",
]
