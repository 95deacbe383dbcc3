"""Leaderboard statistics: pass rates, cell screen, reach vs reliability, separation, world
bootstrap, null model, failure composition, cost; figures and reports (docs/design/050)."""

from apiflow.analysis.ingest import IngestStats, find_trial_files, ingest
from apiflow.analysis.reach import pass_at_k, pass_hat_k
from apiflow.analysis.summary import ReportOptions, summarize
from apiflow.analysis.table import load_table
from apiflow.analysis.trials import Trials, select_rows, trials_from_table
from apiflow.results.taskid import TaskRef, parse_task_id

__all__ = [
    "IngestStats",
    "ReportOptions",
    "TaskRef",
    "Trials",
    "find_trial_files",
    "ingest",
    "load_table",
    "parse_task_id",
    "pass_at_k",
    "pass_hat_k",
    "select_rows",
    "summarize",
    "trials_from_table",
]
