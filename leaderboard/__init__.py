"""The web service: HTTP API, accounts and roles, uploads, and the leaderboard pages."""

from leaderboard.accounts import Principal, create_token, create_user, grant_role
from leaderboard.app import create_app
from leaderboard.ranking import build_leaderboard, parse_dataset_weights, parse_weights, to_csv
from leaderboard.table import TaskTable, load_table

__all__ = [
    "Principal",
    "TaskTable",
    "build_leaderboard",
    "create_app",
    "create_token",
    "create_user",
    "grant_role",
    "load_table",
    "parse_dataset_weights",
    "parse_weights",
    "to_csv",
]
