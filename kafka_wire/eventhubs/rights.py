"""The rights a principal may hold (Event Hubs' SAS rights), in every protocol.
Manage includes Send and Listen (:func:`model.normalize_rights`).

The Schema Registry has rights of its own, which Azure grants only by role (it takes
Microsoft Entra tokens, not SAS): Schema Registry Reader reads, Schema Registry
Contributor reads and writes. Event Hubs Data Owner (and a SAS policy with Manage, the
emulator's stand-in for it) holds both; Send and Listen, and the Data Sender and
Receiver roles, hold neither.
"""
SEND, LISTEN, MANAGE = "Send", "Listen", "Manage"
RIGHTS = (SEND, LISTEN, MANAGE)
SCHEMA_READ, SCHEMA_WRITE = "SchemaRead", "SchemaWrite"
# Any one of these lets a principal read the registry (list groups and versions, get a
# schema, look an id up by content: POST ...:get-id), or write it (register a schema).
SCHEMA_READERS = (SCHEMA_READ, MANAGE)
SCHEMA_WRITERS = (SCHEMA_WRITE, MANAGE)
