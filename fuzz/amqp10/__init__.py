"""The AMQP 1.0 fuzz targets: the codec, the frame parser, the engine, the SASL layer and
the broker core's 1.0 front door (see ``fuzz/README.md``)."""
