"""The runner: the one place trials are played from.

Every caller that plays trials (``apiflow run``, the notebook API, panels, screen-eval, the gates,
MCP serving, the grid's actors) goes through ``play_trial`` or the ``Run.play`` loop, so a trial is
built the same way everywhere: its model from the run's seed, the task and the epoch; its record
from one ``TrialSpec``; its world answers and grades shared through the run's ``Replay`` when there
is one. ``tests/architecture`` checks that nothing else calls ``run_trial``.
"""

from apiflow.runner.run import Run, TrialPlan, play_trial, play_trial_sync

__all__ = ["Run", "TrialPlan", "play_trial", "play_trial_sync"]
