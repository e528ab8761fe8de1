"""Event Hubs over HTTP: the REST data plane (send) on the broker's HTTP listener.

:class:`~kafka_wire.rest.api.RestApi` routes a request to its module, one per
API family (``send``); the console's HTTP server hands it every request that
is not a console page.
"""
