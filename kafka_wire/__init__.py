from kafka_wire.kafka_python import defer_package_init

defer_package_init()
