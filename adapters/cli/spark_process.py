"""The Spark that ``amqp-sansio pipeline`` and ``bench spark`` start, and stop: quiet
unless asked (``--verbose``), its JVM in a session of its own so that a Ctrl-C reaches the
command alone, which stops the query, the session and the JVM itself (or kills the JVM when
that takes too long), its temporary files in a directory of ours, removed once it is gone.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from .progress import Stages

__all__ = ["JVM_EXIT", "running_session", "spark_session"]

#: Seconds the JVM is given to exit by itself once its session is stopped (it then is killed).
JVM_EXIT = 5.0


#: Spark's log (log4j 2) unless ``--verbose``: errors only. An appender is needed: with none,
#: Spark takes its default profile, which announces itself and logs warnings.
_LOG4J2 = """\
# Written by amqp-sansio for the JVM it starts: Spark's log, errors only.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def spark_session(master: str, *, partitions: int = 2, verbose: bool = False) -> Any:
    """A local SparkSession for the commands (UI and console progress off, UTC, few shuffle
    partitions: a stateful aggregation keeps a state store per shuffle partition), with
    ``format("amqp")`` registered. Java is found by
    :func:`~amqp_sansio.adapters.spark.ensure_java` first.

    Unless ``verbose``, Spark is quiet: the JVM it starts (``spark-submit``, and the Python
    workers whose output the JVM passes on) writes to ``/dev/null``, not to our standard
    error; its log4j 2 configuration is ours (errors only, ``-Dlog4j2.configurationFile``
    in ``spark.driver.extraJavaOptions``), and the session's log level is ERROR. Either
    way the JVM starts in a session of its own (``start_new_session``), so a Ctrl-C at the
    terminal reaches this process alone, which stops the query and then the JVM
    (``pipeline``'s Ctrl-C) instead of the JVM dying under the query's feet."""
    scratch = tempfile.mkdtemp(prefix="amqp-sansio-log4j2-")
    try:
        _spark_context(master, partitions, verbose, scratch, local=False)
    finally:  # (read once, when the JVM's logging started)
        shutil.rmtree(scratch, ignore_errors=True)
    return _spark_session(verbose)


def _spark_context(
    master: str, partitions: int, verbose: bool, scratch: str, *, local: bool
) -> None:
    """The first half of :func:`spark_session`, the slow one: the JVM and the SparkContext.
    ``scratch``: a directory for our log4j 2 configuration and, if ``local``, for what the
    JVM writes in temporary files (``spark.local.dir`` and ``java.io.tmpdir``), so that it
    can all be removed once the JVM is gone, even killed."""
    from .. import spark as amqp_spark

    amqp_spark.ensure_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if not verbose:
        warnings.filterwarnings(  # (pyspark's, as it imports its pandas support)
            "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
        )
        py4j = logging.getLogger("py4j")  # (its errors as a JVM goes away: ours say it)
        py4j.addHandler(logging.NullHandler())
        py4j.propagate = False
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("amqp-sansio")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", str(partitions))
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.streaming.stopTimeout", "30s")
    )
    java: list[str] = []
    if not verbose:
        path = os.path.join(scratch, "log4j2.properties")
        with open(path, "w", encoding="utf-8") as out:
            out.write(_LOG4J2)
        java.append(f"-Dlog4j2.configurationFile=file:{path}")
    if local:
        conf.set("spark.local.dir", scratch)
        java.append(f"-Djava.io.tmpdir={scratch}")
    if java:
        conf.set("spark.driver.extraJavaOptions", " ".join(shlex.quote(o) for o in java))
    # Spark's Python workers run ``python -m pyspark.daemon`` in the JVM's working directory,
    # which puts that directory first on their import path: started from a checkout of this
    # repository, they would import the source tree's ``amqp_sansio`` (which has no
    # ``adapters``) instead of the installed package. So the JVM starts elsewhere.
    here = os.getcwd()
    os.chdir(tempfile.gettempdir())
    try:
        gateway = None
        if SparkContext._gateway is None:  # (else pyspark reuses the JVM this process has)
            quiet = {} if verbose else {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            kwargs = {"start_new_session": True, **quiet}
            gateway = launch_gateway(conf, popen_kwargs=kwargs)  # type: ignore[no-untyped-call]
        SparkContext(conf=conf, gateway=gateway)
    finally:
        os.chdir(here)


def _spark_session(verbose: bool) -> Any:
    """The second half of :func:`spark_session`: the session on the SparkContext, made in
    the thread that uses it (the JVM keeps a Python data source, ``format("amqp")``, where
    a streaming write finds it only from the thread the session was made in)."""
    from pyspark.sql import SparkSession

    from .. import spark as amqp_spark

    session = SparkSession.builder.getOrCreate()
    if not verbose:
        session.sparkContext.setLogLevel("ERROR")
    amqp_spark.register(session)
    return session


def _processes() -> Iterator[tuple[int, int, int]]:
    """(pid, parent's pid, session) of each process, from Linux's ``/proc`` (none
    elsewhere)."""
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:  # (ended meanwhile)
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # (the name in parentheses may hold spaces)
        if len(fields) > 3:
            yield int(entry), int(fields[1]), int(fields[3])


def _kill_session(leader: int) -> None:
    """Kill the JVM that leads a session of its own and every process in that session (the
    Python workers it started, whatever their process group), at once (SIGKILL)."""
    pids = {leader} | {pid for pid, _, session in _processes() if session == leader}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _kill_spark(leader: int) -> None:
    """Kill the JVM that leads a session of its own and what it started
    (:func:`_kill_session`), while this process still holds a session of it: pyspark's
    accumulator server, whose connection from the JVM then breaks, says nothing of it
    (by default a socket server prints each failed request's traceback), nor does py4j of
    the call into the JVM that then fails."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None
    # py4j reports a call that fails as the JVM goes on the root logger, which it configures
    # (to print on stderr) if it has no handler; then it has one that prints nothing.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    _kill_session(leader)


def _start(master: str, verbose: bool) -> tuple[Any, bool, str]:
    """:func:`spark_session`, its JVM and SparkContext started in a thread of its own, so
    that a Ctrl-C meanwhile interrupts this one at once: starting Spark takes seconds in
    calls into the JVM, which a KeyboardInterrupt would leave half done. The JVM being
    started (a child of this process that leads a session) is then killed. (The session,
    whether its JVM is ours, started now, not reused, and the directory of its temporary
    files, to be removed once it is gone.)"""
    from pyspark import SparkContext

    ours = SparkContext._gateway is None
    scratch = tempfile.mkdtemp(prefix="amqp-sansio-spark-")
    failed: list[Exception] = []

    def start() -> None:
        try:
            _spark_context(master, 2, verbose, scratch, local=True)
        except Exception as exc:  # (raised in the caller's thread; no signal comes here)
            failed.append(exc)

    thread = threading.Thread(target=start, name="amqp-sansio: starting Spark", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
        if failed:
            raise failed[0]
        return _spark_session(verbose), ours, scratch
    except BaseException:
        if ours:
            me = os.getpid()
            for pid, parent, session in list(_processes()):
                if parent == me and session == pid:
                    _kill_session(pid)
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _jvm(ours: bool) -> Any:
    """The JVM's process (a :class:`subprocess.Popen`) when it is ours, else None."""
    from pyspark import SparkContext

    return getattr(SparkContext._gateway, "proc", None) if ours else None


def _stop(session: Any, jvm: Any, scratch: str, interrupted: bool) -> None:
    """Stop ``session`` and then the JVM if it is ours (``jvm``): it exits when its
    standard input ends (Spark's gateway server watches it), else it is killed after
    :data:`JVM_EXIT` seconds (at once after a Ctrl-C), with what it started; then its
    temporary files go (``scratch``). After a Ctrl-C, the JVM may have been killed already
    (:class:`_Interrupt`): the calls into it then fail, quietly."""
    from pyspark import SparkContext

    try:
        with warnings.catch_warnings():
            if interrupted:  # ("Unable to cleanly shutdown Spark JVM process")
                warnings.simplefilter("ignore")
            session.stop()
    except Exception:
        if not interrupted:
            raise
    if jvm is not None:
        with contextlib.suppress(Exception):
            gateway: Any = SparkContext._gateway
            gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None  # (a next session starts a JVM again)
        with contextlib.suppress(OSError):
            jvm.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            if not interrupted:  # (after a Ctrl-C, there is no time to wait)
                jvm.wait(JVM_EXIT)
        _kill_session(jvm.pid)  # (and the Python workers it may have left behind)
        jvm.wait()
    shutil.rmtree(scratch, ignore_errors=True)


class _Interrupt:
    """SIGINT while Spark runs: noted, and acted on by :meth:`check`, between calls into the
    JVM (a KeyboardInterrupt raised inside one leaves py4j's connection out of step, and
    pyspark's own handler raises it there). A call may take seconds (starting a query): if
    the query, the session and the JVM have not been stopped :data:`GRACE` seconds after
    the SIGINT, ``kill`` is called (it kills the JVM, and the calls into it fail). At the
    end, a SIGINT noted and not yet acted on is raised. Only in the main thread (the only
    one signals reach)."""

    #: Seconds from a Ctrl-C to the JVM killed, if the query and the session have not been
    #: stopped by then.
    GRACE = 0.5

    def __init__(self, kill: Callable[[], None] | None) -> None:
        self.noted = False
        self.raised = False
        self._kill = kill
        self._timer: threading.Timer | None = None

    def check(self) -> None:
        if self.noted and not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def _note(self, signum: int, frame: Any) -> None:
        if self.noted:
            return
        self.noted = True
        if self._kill is not None:
            self._timer = threading.Timer(self.GRACE, self._kill)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """The JVM is stopped: no more need to kill it."""
        if self._timer is not None:
            self._timer.cancel()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self._note)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            self.cancel()
        self.check()


@contextlib.contextmanager
def running_session(
    spark: Any, master: str, *, verbose: bool = False, stages: Stages | None = None
) -> Iterator[tuple[Any, Callable[[], None]]]:
    """(``spark``, else the active session (a notebook's, a test's), else a new one made by
    :func:`spark_session` and stopped at the end, its JVM with it; and a ``check`` that
    raises KeyboardInterrupt if SIGINT came). From the session's start to its stop, SIGINT
    is noted, not raised (:class:`_Interrupt`)."""
    from .. import spark as amqp_spark

    amqp_spark.ensure_java()
    from pyspark.sql import SparkSession

    made, ours, scratch = None, False, ""  # (a session made here, whether its JVM is ours)
    if spark is None:
        spark = SparkSession.getActiveSession()
        if spark is None:
            if stages is not None:
                stages.stage("starting Spark", note=f"master {master}")
            made, ours, scratch = _start(master, verbose)
            spark = made
    amqp_spark.register(spark)
    jvm = _jvm(ours)
    interrupt = _Interrupt(None if jvm is None else functools.partial(_kill_spark, jvm.pid))
    with interrupt.deferred():
        try:
            try:
                yield spark, interrupt.check
            finally:
                if made is not None:
                    _stop(made, jvm, scratch, interrupt.noted)
        except Exception:
            if interrupt.noted:  # (a call into the JVM failed: it was killed after a Ctrl-C)
                raise KeyboardInterrupt from None
            raise
