"""The AMQP 0-10 fuzz targets: ``amqp010-codec`` (:mod:`.codec`), ``amqp010-frames``
(:mod:`.frames`), ``amqp010-engine`` (:mod:`.engine`), and the broker core's
``broker-010`` and ``broker-010-opened`` (:mod:`.broker`); see ``fuzz/README.md``."""
