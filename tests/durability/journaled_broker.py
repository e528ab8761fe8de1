"""``kafka-wire`` with the fsync journal installed (tests/durability/fsync_journal.py):
``python tests/durability/journaled_broker.py JOURNAL_DIR serve --data-dir ...``."""
import sys

from fsync_journal import install  # this file's directory is sys.path[0]

if __name__ == "__main__":
    install(sys.argv[1])
    from kafka_wire.cli import main

    sys.exit(main(sys.argv[2:]))
