"""``python -m amqp_sansio.adapters.cli``: the ``amqp-sansio`` command."""

from __future__ import annotations

import sys

from .command import main

sys.exit(main())
