"""evaluator."""

__all__: list[str] = []
