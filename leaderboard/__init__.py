"""leaderboard."""

__all__: list[str] = []
