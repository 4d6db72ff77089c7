"""The web service: HTTP API, accounts and roles, uploads, and the leaderboard pages."""

from leaderboard.accounts import Principal, create_token, create_user, grant_role
from leaderboard.app import create_app
from leaderboard.cards import public_table, render_markdown
from leaderboard.ranking import build_leaderboard, parse_dataset_weights, parse_weights, to_csv
from leaderboard.snapshots import create_snapshot, get_snapshot, list_snapshots
from leaderboard.table import TaskTable, load_table

__all__ = [
    "Principal",
    "TaskTable",
    "build_leaderboard",
    "create_app",
    "create_snapshot",
    "create_token",
    "create_user",
    "get_snapshot",
    "grant_role",
    "list_snapshots",
    "load_table",
    "parse_dataset_weights",
    "parse_weights",
    "public_table",
    "render_markdown",
    "to_csv",
]
