"""The rights a principal may hold (Event Hubs' SAS rights), in every protocol.
Manage includes Send and Listen (:func:`model.normalize_rights`)."""
SEND, LISTEN, MANAGE = "Send", "Listen", "Manage"
RIGHTS = (SEND, LISTEN, MANAGE)
