"""Every AMQP 0-9-1 method, grouped by its class as pamqp groups them: ``commands.Basic.Publish``
is :class:`~amqp_sansio.definitions.amqp091.spec.BasicPublish` (0-9-1 spec, the ``class`` and
``method`` elements; RabbitMQ's extensions included), ``commands.Basic.Properties`` the ``basic``
content properties. The same classes as :mod:`~amqp_sansio.definitions.amqp091.spec`'s flat names,
one namespace per class (``tests/project/test_faces.py`` checks that every method is
here, once, under its class).
"""

from __future__ import annotations

from ..definitions.amqp091 import spec

__all__ = [
    "Connection",
    "Channel",
    "Access",
    "Exchange",
    "Queue",
    "Basic",
    "Confirm",
    "Tx",
]


class Connection:
    """Class ``connection`` (class id 10)."""

    Start = spec.ConnectionStart
    StartOk = spec.ConnectionStartOk
    Secure = spec.ConnectionSecure
    SecureOk = spec.ConnectionSecureOk
    Tune = spec.ConnectionTune
    TuneOk = spec.ConnectionTuneOk
    Open = spec.ConnectionOpen
    OpenOk = spec.ConnectionOpenOk
    Close = spec.ConnectionClose
    CloseOk = spec.ConnectionCloseOk
    Blocked = spec.ConnectionBlocked
    Unblocked = spec.ConnectionUnblocked
    UpdateSecret = spec.ConnectionUpdateSecret
    UpdateSecretOk = spec.ConnectionUpdateSecretOk


class Channel:
    """Class ``channel`` (class id 20)."""

    Open = spec.ChannelOpen
    OpenOk = spec.ChannelOpenOk
    Flow = spec.ChannelFlow
    FlowOk = spec.ChannelFlowOk
    Close = spec.ChannelClose
    CloseOk = spec.ChannelCloseOk


class Access:
    """Class ``access`` (class id 30)."""

    Request = spec.AccessRequest
    RequestOk = spec.AccessRequestOk


class Exchange:
    """Class ``exchange`` (class id 40)."""

    Declare = spec.ExchangeDeclare
    DeclareOk = spec.ExchangeDeclareOk
    Delete = spec.ExchangeDelete
    DeleteOk = spec.ExchangeDeleteOk
    Bind = spec.ExchangeBind
    BindOk = spec.ExchangeBindOk
    Unbind = spec.ExchangeUnbind
    UnbindOk = spec.ExchangeUnbindOk


class Queue:
    """Class ``queue`` (class id 50)."""

    Declare = spec.QueueDeclare
    DeclareOk = spec.QueueDeclareOk
    Bind = spec.QueueBind
    BindOk = spec.QueueBindOk
    Purge = spec.QueuePurge
    PurgeOk = spec.QueuePurgeOk
    Delete = spec.QueueDelete
    DeleteOk = spec.QueueDeleteOk
    Unbind = spec.QueueUnbind
    UnbindOk = spec.QueueUnbindOk


class Basic:
    """Class ``basic`` (class id 60)."""

    Qos = spec.BasicQos
    QosOk = spec.BasicQosOk
    Consume = spec.BasicConsume
    ConsumeOk = spec.BasicConsumeOk
    Cancel = spec.BasicCancel
    CancelOk = spec.BasicCancelOk
    Publish = spec.BasicPublish
    Return = spec.BasicReturn
    Deliver = spec.BasicDeliver
    Get = spec.BasicGet
    GetOk = spec.BasicGetOk
    GetEmpty = spec.BasicGetEmpty
    Ack = spec.BasicAck
    Reject = spec.BasicReject
    RecoverAsync = spec.BasicRecoverAsync
    Recover = spec.BasicRecover
    RecoverOk = spec.BasicRecoverOk
    Nack = spec.BasicNack
    Properties = spec.BasicProperties


class Confirm:
    """Class ``confirm`` (class id 85)."""

    Select = spec.ConfirmSelect
    SelectOk = spec.ConfirmSelectOk


class Tx:
    """Class ``tx`` (class id 90)."""

    Select = spec.TxSelect
    SelectOk = spec.TxSelectOk
    Commit = spec.TxCommit
    CommitOk = spec.TxCommitOk
    Rollback = spec.TxRollback
    RollbackOk = spec.TxRollbackOk
