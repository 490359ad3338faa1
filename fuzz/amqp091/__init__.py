"""The AMQP 0-9-1 fuzz targets: the codec, the frame parser, the engine and the broker
core's 0-9-1 front door (see ``fuzz/README.md``)."""
