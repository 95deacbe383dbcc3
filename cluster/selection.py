"""Run part of a grid from the command line: ``grid run --models A,B --tasks T1,T2 --epochs 2``.

A selection narrows which of the grid's planned trials this invocation runs; it never changes the
grid (its id, its manifest, its trial ids), so the rest of the grid stays pending in the same
folder and a later run without the flags, or with others, fills it. To grow a grid (more epochs,
models or tasks than its file names), edit the file and rerun with ``--extend`` (docs/design/047).
"""

from __future__ import annotations

from dataclasses import dataclass

from apiflow.errors import UsageError
from cluster.plan import PlannedTrial
from cluster.spec import GridSpec


def _names(value: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


@dataclass(frozen=True)
class Selection:
    """The part of a grid to run (empty fields: all of it).

    Attributes:
        models: The grid's models to run, by model id (``openai/gpt-5.5``) or slug.
        tasks: The task ids to run (each must be one the grid plans).
        epochs: Run epochs 1..N only (at most the grid's).
    """

    models: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    epochs: int | None = None

    @classmethod
    def from_flags(cls, models: str | None, tasks: str | None, epochs: int | None) -> Selection:
        """From the comma-separated ``--models`` and ``--tasks`` and ``--epochs``."""
        return cls(_names(models), _names(tasks), epochs)

    @property
    def whole(self) -> bool:
        """Nothing narrowed: the whole grid."""
        return not self.models and not self.tasks and self.epochs is None

    def describe(self) -> str:
        """The flags, as a user would type them (for the summary's resume line)."""
        parts = [f"--models {','.join(self.models)}"] if self.models else []
        parts += [f"--tasks {','.join(self.tasks)}"] if self.tasks else []
        parts += [f"--epochs {self.epochs}"] if self.epochs is not None else []
        return " ".join(parts)

    def keep(self, spec: GridSpec, plan: list[PlannedTrial]) -> list[PlannedTrial]:
        """The planned trials this selection runs, in plan order.

        Raises:
            UsageError: A model or task the grid does not plan, more epochs than it has, or a
                selection that keeps no trial (one line each, naming the fix).
        """
        if self.whole:
            return plan
        indices = self._model_indices(spec)
        if self.epochs is not None and not 1 <= self.epochs <= spec.epochs:
            raise UsageError(
                f"--epochs {self.epochs}: the grid has epochs 1..{spec.epochs}; to add epochs, edit the grid "
                "and rerun with --extend"
            )
        planned_tasks = {t.task_id for t in plan}
        unknown = [t for t in self.tasks if t not in planned_tasks]
        if unknown:
            raise UsageError(
                f"--tasks: the grid plans no task {', '.join(unknown[:5])}"
                f"{' …' if len(unknown) > 5 else ''} (`apiflow grid run GRID --dry-run` lists its plan size; "
                "`apiflow task list` the bank's ids)"
            )
        tasks = set(self.tasks)
        kept = [
            t
            for t in plan
            if (indices is None or t.model_index in indices)
            and (not tasks or t.task_id in tasks)
            and (self.epochs is None or t.epoch <= self.epochs)
        ]
        if not kept:
            raise UsageError(f"the selection {self.describe()} keeps no trial of the grid")
        return kept

    def _model_indices(self, spec: GridSpec) -> set[int] | None:
        if not self.models:
            return None
        found: set[int] = set()
        for name in self.models:
            hits = [i for i, m in enumerate(spec.models) if name in (m.model, m.slug)]
            if not hits:
                names = ", ".join(m.slug for m in spec.models)
                raise UsageError(f"--models: the grid has no model {name} (its models: {names})")
            found.update(hits)
        return found
