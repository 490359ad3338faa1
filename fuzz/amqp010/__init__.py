"""The AMQP 0-10 fuzz targets: ``amqp010-codec`` (:mod:`.codec`)."""
