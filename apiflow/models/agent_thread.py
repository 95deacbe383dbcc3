"""Where a plug-in's model runs: a daemon thread of its own per trial, with its own event loop.

A plug-in's ``generate`` is untrusted code. Awaited on the trial's event loop, a synchronous block inside
it (``time.sleep``, a busy loop) holds that loop: the trial's clock cannot fire, and the worker, grid
actor or ``apiflow run`` serving it hangs with it. Run here, it leaves the trial's loop only waiting on a
future, so the clock fires and the trial ends as ``limit`` ``time``; a thread still blocked is a daemon,
left to end with its block or with the process, and stops neither the process nor the next trials.

One thread per trial, reused across its turns: a plug-in may keep loop-bound state (an HTTP client)
from one turn to the next. What the model's code raises stays an exception of the model's: a
``CancelledError`` that crosses back without the trial having been cancelled is named as the model's
(``AgentFault``), never taken for the harness stopping. A thread that holds the GIL inside one C call
cannot be interrupted this way; only a process of its own could be.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from apiflow.models.base import AgentFault

T = TypeVar("T")


def cancelled_here() -> bool:
    """Whether the running task is being cancelled (its trial stopped waiting), as opposed to code it
    awaits having raised ``CancelledError`` of its own accord."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close ``loop`` as ``asyncio.run`` does: cancel what is still pending (a provider library's
    background logging task, say) and let it finish first. Left pending on a closed loop, such a task
    is finalised later by the garbage collector, which can crash the interpreter at exit."""
    try:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class _DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """The agent loop's default executor: each call on a daemon thread of its own. A blocked call handed
    to ``asyncio.to_thread`` would otherwise hold a pool thread the interpreter joins at exit."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits the call
                future.set_exception(exc)

        threading.Thread(target=run, name="apiflow-agent-call", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: its threads are daemons, left to end with their calls."""


class AgentThread:
    """One trial's thread for agent code: ``run`` awaits a coroutine on it from the trial's loop."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_default_executor(_DaemonExecutor())
        self._thread = threading.Thread(target=self._serve, name="apiflow-agent", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        # Whatever stops the loop (``close``, or the model's code stopping it or raising out of a
        # callback), what is still pending is cancelled: the trial waiting on it hears so at once.
        with contextlib.suppress(BaseException):
            loop.run_forever()
        with contextlib.suppress(BaseException):  # the model's code may refuse to end: a daemon's fate
            close_loop(loop)

    @property
    def alive(self) -> bool:
        """Whether the thread still runs (blocked, or serving)."""
        return self._thread.is_alive()

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro``'s result, run on this thread; awaited here, so the caller's timeout holds.

        Raises:
            AgentFault: The thread's loop ended before ``coro`` did (the model's code stopped it).
        """
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        except RuntimeError:  # its loop is closed
            coro.close()
            raise AgentFault("the model's event loop was stopped by its own code") from None
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if cancelled_here():
                raise  # the trial stopped waiting: its clock ran out, or the harness is stopping
            raise AgentFault(
                "the model's event loop was stopped by its own code before its turn returned"
            ) from None

    def close(self) -> None:
        """Stop the thread's loop once it is free: at once when idle, else when its block ends."""
        with contextlib.suppress(RuntimeError):  # already closed
            self._loop.call_soon_threadsafe(self._loop.stop)
