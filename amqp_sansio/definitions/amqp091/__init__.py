"""AMQP 0-9-1's definitions: the classes, methods and content properties of the specification
(``spec``, generated from its XML) and their codec (``methods``)."""
