"""The AMQP 0-10 fuzz targets: the codec and the frame parser (see ``fuzz/README.md``)."""
