"""submission_sandbox."""

__all__: list[str] = []
