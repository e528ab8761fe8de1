"""Event Hubs Capture as a Spark Structured Streaming job.

- ``source``: the ``eventhubs`` PySpark streaming data source (pyspark 4.x
  Python DataSource API). It reads event hub partitions straight from the
  broker's log directory through ``log.reader`` (read-only, CRC-checked,
  never past the last batch the broker finished appending nor into an open
  transaction), or through the Kafka protocol (``bootstrap``) when the job
  runs on a cluster that cannot see the broker's disk (``kafka_backend``).
- ``sink``: the ``eventhubs-capture`` streaming sink writing files with
  ``capture`` (Avro or Parquet, names, CaptureFileCreated records).
- ``capture_job``: wires the two together (``run``, ``run_in_background``).
- ``session``: the SparkSession (local by default, UI off).

Exactly once across restarts
----------------------------
Each partition's offset in Spark's checkpoint is a capture.windows.WindowState:
the next sequence number plus where its windows stand (window start, last
file name, whether the window already has a file). When Spark asks for the
latest offset, the source plans windows over the new batches (capture.windows
.plan, from the ``.batches`` index alone: offsets, append times, sizes) and
ends the micro-batch after the last *closed* file: a window closed by time
(its end passed, plus a grace period) or by size. The open window is left
for a later micro-batch; ``--once`` closes it too. Spark writes that end to
its offset log before running the batch.

``partitions(start, end)`` plans again from the recorded start and end
alone, which gives the same files, names included (a pure function; a
property test replays arbitrary histories). Each Spark task gets one
partition's files and emits its events in order, each row tagged with its
file (an empty file is one marker row); the sink writes each file under a
temporary name and renames it into place. So a micro-batch that Spark
replays after a crash rewrites the same files under the same names, byte
for byte for Avro: nothing is duplicated, and since offsets only move
after a commit, nothing is lost.

The sink's commit (on the driver, after all tasks succeeded) keeps a small
journal next to the Spark checkpoint: batch id -> the CaptureFileCreated
records of its files. The records are saved there first, then appended to
``<out>/_capture_events.jsonl``, then the batch is marked done; a repeated
commit of the same batch id appends nothing twice.

Imports flow ``spark`` -> ``capture`` -> ``log``. Nothing here imports the
server: the CLI hands plain settings to ``capture_job``.
"""
