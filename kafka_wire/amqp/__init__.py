"""The AMQP 1.0 front end: what the Azure Event Hubs SDKs speak.

Proton (python-qpid-proton) does the protocol; these modules map it onto the
namespace's hubs, log, policy and quotas, the same ones the Kafka handlers
use: :mod:`.connection` (bytes, SASL, the engine's events), :mod:`.nodes`
(which node a link addresses), :mod:`.cbs` (tokens), :mod:`.management`
(hub and partition properties), :mod:`.publish` (sending), :mod:`.consume`
(receiving), :mod:`.messages` (AMQP messages ⇄ records).
"""
