"""Helpers the test modules share (tests import them as ``support.X``: pyproject.toml puts
``tests/`` on ``sys.path`` with pytest's ``pythonpath`` option). No test module imports
another test module; what two of them need lives here."""

from __future__ import annotations

from pathlib import Path

#: The repository's root (this file is tests/support/__init__.py).
ROOT = Path(__file__).resolve().parents[2]

#: The public modules: the top level and the submodules users import names from. Each has a
#: section in docs/api.rst (tests/project/test_public_api.py); the layers that may use the
#: top level may use all of them (tests/project/test_layers.py).
PUBLIC_MODULES = (
    "amqp_sansio",
    "amqp_sansio.events",
    "amqp_sansio.codec.amqp10",
    "amqp_sansio.definitions.amqp10.performatives",
    "amqp_sansio.definitions.amqp10.messaging",
    "amqp_sansio.definitions.amqp10.message",
    "amqp_sansio.definitions.amqp10.transactions",
    "amqp_sansio.engine.amqp10.transactions",
    "amqp_sansio.engine.amqp10.states",
    "amqp_sansio.engine.amqp10.serial",
    "amqp_sansio.framing.amqp10",
    "amqp_sansio.sasl",
    "amqp_sansio.security.tls",
    "amqp_sansio.security.websocket",
    "amqp_sansio.security.proxy",
    "amqp_sansio.security.stack",
    "amqp_sansio.errors",
    "amqp_sansio.amqp091",
    "amqp_sansio.amqp010",
)
