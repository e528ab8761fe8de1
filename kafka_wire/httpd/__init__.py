"""The broker's HTTP listener (:mod:`.listener`), which routes to the REST API
(:mod:`kafka_wire.rest`) and the console (:mod:`kafka_wire.console`) as siblings."""
