"""The broker's AMQP 1.0 side: a client connection (:mod:`.connection`), its consumers and
producers (:mod:`.endpoints`), the ``$management`` node (:mod:`.management`), the anonymous
relay (:mod:`.relay`) and transactions (:mod:`.transactions`). It reaches the broker only
through :mod:`amqp_sansio.broker._interface` and imports no other protocol's folder."""
