"""The three high-level adapters as the scenarios of tests/client/amqp10/test_adapters.py (and the
reconnection tests) see them: one :class:`Adapter` each, in ``ADAPTERS``, and :func:`aw`, which
awaits what the asyncio and trio adapters return and takes the blocking adapter's result as it
is, so the same coroutine drives all three."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

import trio
from amqp_sansio.adapters import aio, sockets, trio_adapter

WAIT = 20.0


async def aw(value: Any) -> Any:
    """Await ``value`` if it is awaitable (asyncio), else take it as it is (blocking)."""
    if inspect.isawaitable(value):
        return await value
    return value


def run_blocking(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a scenario over the blocking adapter: it never suspends."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise AssertionError("a blocking scenario suspended")


# -- the adapters --------------------------------------------------------------------------


class Adapter:
    """One adapter as the scenarios see it."""

    name: str
    module: Any

    def run(self, scenario: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        raise NotImplementedError

    def serve(self, on_link: Callable[[Any], None], **options: Any) -> Any:
        """A context manager: the adapter's server in a thread, yielding its port."""
        raise NotImplementedError

    async def idle(self, conn: Any, seconds: float) -> None:
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def connected(self, url: str, **options: Any) -> AsyncIterator[Any]:
        """A connection to ``url``, closed at the end."""
        conn = await aw(self.module.connect(url, timeout=WAIT, **options))
        try:
            yield conn
        finally:
            await aw(conn.close())


@contextlib.contextmanager
def in_a_thread(
    run: Callable[[Callable[[int], None]], Any], stop: Callable[[], None]
) -> Iterator[int]:
    """A server whose event loop ``run(started)`` runs in a thread (it calls
    ``started(port)`` once listening) until ``stop()``: yields its port."""
    ports: queue.Queue[Any] = queue.Queue()

    def thread_main() -> None:
        try:
            run(ports.put)
        except BaseException as exc:
            ports.put(exc)

    thread = threading.Thread(target=thread_main, daemon=True)
    thread.start()
    port = ports.get(timeout=WAIT)
    if isinstance(port, BaseException):
        raise port
    try:
        yield port
    finally:
        stop()
        thread.join(WAIT)
        assert not thread.is_alive()


class Blocking(Adapter):
    name = "sockets"
    module = sockets

    def run(self, scenario: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        return run_blocking(scenario(*args))

    @contextlib.contextmanager
    def serve(self, on_link: Callable[[Any], None], **options: Any) -> Iterator[int]:
        server = sockets.listen("127.0.0.1", 0, on_link, **options)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.port
        finally:
            server.close()
            thread.join(WAIT)
            assert not thread.is_alive()

    async def idle(self, conn: Any, seconds: float) -> None:
        conn.wait(seconds)


class Asyncio(Adapter):
    name = "aio"
    module = aio

    def run(self, scenario: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        return asyncio.run(asyncio.wait_for(scenario(*args), 60))

    def serve(self, on_link: Callable[[Any], None], **options: Any) -> Any:
        state: dict[str, Any] = {}

        async def main(started: Callable[[int], None]) -> None:
            stop = asyncio.Event()
            state["stop"], state["loop"] = stop, asyncio.get_running_loop()
            async with await aio.listen("127.0.0.1", 0, on_link, **options) as server:
                started(server.port)
                await stop.wait()

        return in_a_thread(
            lambda started: asyncio.run(main(started)),
            lambda: state["loop"].call_soon_threadsafe(state["stop"].set),
        )

    async def idle(self, conn: Any, seconds: float) -> None:
        await asyncio.sleep(seconds)


#: The longest a trio task may run without yielding to the loop (a blocking call would).
STEP_LIMIT = 1.0


class StepTimer(trio.abc.Instrument):
    """Measures the longest step any task takes between two checkpoints."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self._started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self.longest = max(self.longest, time.perf_counter() - self._started)


class Trio(Adapter):
    name = "trio"
    module = trio_adapter

    def run(self, scenario: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any:
        async def main() -> Any:
            with trio.fail_after(60):
                return await scenario(*args)

        timer = StepTimer()
        result = trio.run(main, instruments=[timer], strict_exception_groups=True)
        assert timer.longest < STEP_LIMIT, f"a task blocked the loop for {timer.longest:.2f} s"
        return result

    def serve(self, on_link: Callable[[Any], None], **options: Any) -> Any:
        state: dict[str, Any] = {}

        async def main(started: Callable[[int], None]) -> None:
            stop = trio.Event()
            state["stop"], state["token"] = stop, trio.lowlevel.current_trio_token()
            async with trio_adapter.listen("127.0.0.1", 0, on_link, **options) as server:
                started(server.port)
                await stop.wait()

        return in_a_thread(
            lambda started: trio.run(main, started, strict_exception_groups=True),
            lambda: trio.from_thread.run_sync(state["stop"].set, trio_token=state["token"]),
        )

    async def idle(self, conn: Any, seconds: float) -> None:
        await trio.sleep(seconds)

    @contextlib.asynccontextmanager
    async def connected(self, url: str, **options: Any) -> AsyncIterator[Any]:
        async with trio_adapter.connect(url, timeout=WAIT, **options) as conn:
            yield conn


ADAPTERS = {"sockets": Blocking(), "aio": Asyncio(), "trio": Trio()}


def connected(adapter: Adapter, url: str, **options: Any) -> Any:
    return adapter.connected(url, **options)
