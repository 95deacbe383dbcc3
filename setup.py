"""Build hook: the wheel carries the repository's banks and configs as ``apiflow/_data/``.

They stay at the repository's top (``bank/``, ``configs/``), where a clone runs on them; an
installed apiflow finds the copy through ``apiflow.resources``. An editable install copies
nothing: it runs from the clone. Everything else about the build is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SHIPPED_TREES = ("bank", "configs")  # as apiflow.resources.SHIPPED_TREES (not imported: a build imports no apiflow)


class BuildWithData(build_py):
    """``build_py``, then the shipped trees copied under ``apiflow/_data/`` in the build folder."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "apiflow" / "_data"
        shutil.rmtree(target, ignore_errors=True)  # a reused build folder must not keep a removed file
        for tree in SHIPPED_TREES:
            shutil.copytree(HERE / tree, target / tree, ignore=shutil.ignore_patterns("__pycache__", ".*"))


setup(cmdclass={"build_py": BuildWithData})
