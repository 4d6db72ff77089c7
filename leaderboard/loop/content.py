"""An example's content version: what a validator judged, so that an edit in between shows.

An author may rewrite a pending example until someone judges it. A validator who loaded
version A and answers after the author saved version B would otherwise judge text they
never read; the verdict names the version it judged and a different one is refused (409).
The version is a digest of what the validator sees (inputs, intended answer, the target's
answer), so it needs no stored counter and a page can carry it in a hidden field.
"""

from __future__ import annotations

import hashlib
import json

from evalboard.core.tables import Example

__all__ = ["content_version"]


def content_version(example: Example) -> str:
    """Sixteen hex digits of the example's judged content.

    >>> a = Example(inputs={"statement": "ok"}, gold={"label": "positive"}, model_output=None)
    >>> b = Example(inputs={"statement": "ok!"}, gold={"label": "positive"}, model_output=None)
    >>> content_version(a) == content_version(a), content_version(a) == content_version(b)
    (True, False)
    """
    shown = {"inputs": example.inputs, "gold": example.gold, "output": example.model_output}
    encoded = json.dumps(shown, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:16]
