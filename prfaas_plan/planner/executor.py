"""Where independent planning tasks run (compare's options): in this process, in local worker
processes, or on a Ray cluster. Every executor returns the results in the order of the tasks
given, whatever order they finish in, so that a comparison's rows do not depend on where its
options were planned.

``Executor.map(fn, tasks, progress)`` calls ``fn(*task)`` for every task; ``fn`` must be a
module-level function and the tasks picklable (a worker imports ``fn`` by name, so a Ray
cluster's nodes need the same prfaas-plan installed; a local cluster started here runs this
process's own copy). ``progress(done, total)`` is called in the calling process as tasks finish.

Ray (an optional dependency, ``pip install 'prfaas-plan[ray]'``) is imported only by
``RayExecutor``. Its ``address`` is as ``ray.init`` reads it: ``"local"`` starts a cluster on
this machine for the run (and stops it after), ``"auto"`` joins the one running here (``ray
start --head``), ``"HOST:PORT"`` a cluster's head node and ``"ray://HOST:PORT"`` the Ray client.
When this process is already connected to Ray (``ray.is_initialized()``), that connection is
used and left open.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PlanInputError
from ..ranges import JOBS

Progress = Callable[[int, int], None]
RAY_EXTRA = "pip install 'prfaas-plan[ray]'"  # the optional dependency that brings Ray


def no_progress(done: int, total: int) -> None:
    """A ``Progress`` that reports nothing."""


class Executor:
    """Runs tasks and returns their results in task order."""

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple], progress: Progress | None = None) -> list:
        raise NotImplementedError


@dataclass(frozen=True)
class InProcess(Executor):
    """One task after another in this process."""

    def map(self, fn, tasks, progress=None):
        progress = progress or no_progress
        out = []
        for k, task in enumerate(tasks):
            out.append(fn(*task))
            progress(k + 1, len(tasks))
        return out


@dataclass(frozen=True)
class LocalProcesses(Executor):
    """``jobs`` worker processes on this machine (forked where the platform can, so that a worker
    starts with this process's imports and caches)."""

    jobs: int

    def __post_init__(self):
        JOBS.check(self.jobs, "jobs")

    def map(self, fn, tasks, progress=None):
        if self.jobs == 1 or len(tasks) <= 1:
            return InProcess().map(fn, tasks, progress)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        progress = progress or no_progress
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        out: list = [None] * len(tasks)
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(tasks)), mp_context=context) as pool:
            futures = {pool.submit(fn, *task): k for k, task in enumerate(tasks)}
            for done, future in enumerate(as_completed(futures), start=1):
                out[futures[future]] = future.result()
                progress(done, len(tasks))
        return out


def ray_available() -> bool:
    """Whether Ray can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class RayExecutor(Executor):
    """One Ray task per task on the cluster at ``address`` (see the module docstring); the
    cluster's CPUs set how many run at once. Arguments shared by every task (the same object in
    each, e.g. the scenario set) are put in Ray's object store once."""

    address: str

    def __post_init__(self):
        if not isinstance(self.address, str) or not self.address.strip():
            raise PlanInputError("a Ray address: 'local', 'auto', HOST:PORT or ray://HOST:PORT", field="ray_address")
        if not ray_available():
            raise PlanInputError(f"Ray is not installed; install the optional extra: {RAY_EXTRA}", field="ray_address")

    def _connect(self):
        """(ray, whether this call connected and so must disconnect)."""
        import logging

        import ray

        if ray.is_initialized():
            return ray, False
        options: dict[str, Any] = dict(address=self.address, logging_level=logging.ERROR, log_to_driver=False)
        if self.address == "local":
            # the workers of a cluster started here import this process's prfaas_plan
            package_root = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
            options.update(include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            reason = " ".join(str(exc).split()).split(". ")[0].rstrip(".") or type(exc).__name__
            raise PlanInputError(
                f"cannot start or join the Ray cluster at {self.address!r}: {reason} "
                "(start one with `ray start` on its head node, or give 'local' for one for this run)",
                field="ray_address",
            ) from None
        return ray, True

    def map(self, fn, tasks, progress=None):
        progress = progress or no_progress
        if not tasks:
            return []
        ray, connected = self._connect()
        try:
            remote = ray.remote(fn)
            # position -> object ref of an argument every task passes
            shared = {p: ray.put(v) for p, v in enumerate(tasks[0]) if len(tasks) > 1 and all(t[p] is v for t in tasks)}
            refs = [remote.remote(*(shared.get(p, v) for p, v in enumerate(task))) for task in tasks]
            values: dict = {}  # ref -> its task's result
            pending = list(refs)
            while pending:  # whatever finished within a fifth of a second, then the rest
                ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.2)
                values.update(zip(ready, ray.get(ready)))
                if ready:
                    progress(len(values), len(tasks))
            return [values[ref] for ref in refs]
        finally:
            if connected:
                ray.shutdown()


def executor_for(jobs: int = 1, ray_address: str | None = None) -> Executor:
    """The executor for ``jobs`` local processes, or for the Ray cluster at ``ray_address`` (then
    ``jobs`` must be 1, its default: the cluster's CPUs set the parallelism)."""
    if ray_address is not None:
        if jobs != 1:
            raise PlanInputError(
                f"give either {jobs} local processes or a Ray cluster, not both (on Ray the cluster's CPUs set the parallelism)",
                field="jobs",
            )
        return RayExecutor(ray_address)
    JOBS.check(jobs, "jobs")
    return LocalProcesses(jobs) if jobs > 1 else InProcess()
