"""The AMQP 0-10 fuzz targets: ``amqp010-codec`` (:mod:`.codec`), ``amqp010-frames``
(:mod:`.frames`) and ``amqp010-engine`` (:mod:`.engine`); see ``fuzz/README.md``."""
