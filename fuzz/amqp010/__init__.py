"""The AMQP 0-10 fuzz targets: ``amqp010-codec`` (:mod:`.codec`) and ``amqp010-frames``
(:mod:`.frames`); see ``fuzz/README.md``."""
