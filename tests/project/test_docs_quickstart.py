"""docs/quickstart.rst: first in the docs' table of contents, and every Python example in it
runs as a user runs it, a program of its own against ``amqp-sansio broker`` started with no
options, and prints what its comments say. (Its console blocks run in
``tests/cli/test_cli_docs.py``, as every page's do.)

The examples name ``localhost`` on the default port, where CI has RabbitMQ: here
``localhost`` becomes ``localhost:PORT``, the broker's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from support import ROOT
from support.broker_process import BrokerProcess

PAGE = ROOT / "docs" / "quickstart.rst"


def _examples() -> dict[str, str]:
    """The page's named Python blocks, dedented."""
    text = PAGE.read_text()
    pattern = r"\.\. code-block:: python\n   :name: (quickstart-[\w-]+)\n\n((?:(?:   .*)?\n)+)"
    return {name: textwrap.dedent(body) for name, body in re.findall(pattern, text)}


def _promised(code: str) -> list[str]:
    """What the example's ``print`` lines say they print (their ``# ...`` comments)."""
    return [m[1] for m in re.finditer(r"print\(.*\)\s+# (.*)$", code, flags=re.M)]


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as b:  # amqp-sansio broker --port 0, nothing else
        yield b


def test_the_quickstart_opens_the_docs() -> None:
    """First in the toctree of docs/index.rst, before the codec."""
    index = (ROOT / "docs" / "index.rst").read_text()
    toctree = index.split(".. toctree::", 1)[1].split("\n\n", 2)[1]
    entries = [line.strip() for line in toctree.splitlines() if line.strip()]
    assert entries[0] == "quickstart" and entries.index("codec") > 0


@pytest.mark.parametrize(
    "name", ["quickstart-sockets", "quickstart-aio", "quickstart-trio", "quickstart-091"]
)
def test_the_quickstart_examples_run(name: str, broker: BrokerProcess) -> None:
    code = _examples()[name]
    promised = _promised(code)
    assert promised, f"{name} shows nothing it prints"
    assert "@localhost" in code or "//localhost/" in code
    on_port = re.sub(r"(amqp://(?:[^@/\s]+@)?localhost)(?=[/\"])", rf"\1:{broker.port}", code)
    assert on_port != code
    done = subprocess.run(
        [sys.executable, "-c", on_port],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT.parent,  # (the installed package, not the checkout's folder)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == promised
