// @azure/event-hubs through a geo-replication failover, for tests/geo/test_geo_sdk_failover.py.
//
//   node geo_subscribe.js properties CONNECTION_STRING HUB
//   node geo_subscribe.js subscribe CONNECTION_STRING HUB SECONDS [PARTITION_ID START]
//
// properties: getEventHubProperties (isGeoDrEnabled) and getPartitionProperties of each
//   partition; one JSON object.
// subscribe: EventHubConsumerClient.subscribe from the earliest event (or, for one
//   partition, from START: an offset string, or #N for a sequence number) for SECONDS,
//   printing one JSON line per event {event: {partition, body, offset, seq}} and per
//   error {error: {name, code, message}} as they come, then {done: true}.
//
// The SDK's default retry options (it reconnects as an application's would), unless
// GEO_JS_RETRIES=N: N retries 200 ms apart (the defaults wait 30 s between attempts).
'use strict'
const { EventHubConsumerClient, earliestEventPosition } = require('@azure/event-hubs')

const options = process.env.GEO_JS_RETRIES === undefined ? {}
  : { retryOptions: { maxRetries: Number(process.env.GEO_JS_RETRIES), retryDelayInMs: 200 } }

const line = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

async function properties(cs, hub) {
  const client = new EventHubConsumerClient('$Default', cs, hub, options)
  try {
    const hubProps = await client.getEventHubProperties()
    const partitions = []
    for (const id of hubProps.partitionIds) partitions.push(await client.getPartitionProperties(id))
    line({ hub: hubProps, partitions })
  } finally {
    await client.close()
  }
}

async function subscribe(cs, hub, seconds, partitionId, start) {
  const client = new EventHubConsumerClient('$Default', cs, hub, options)
  const handlers = {
    processEvents: async (events, context) => {
      for (const e of events) {
        line({ event: { partition: context.partitionId, body: String(e.body), offset: e.offset,
                        seq: e.sequenceNumber } })
      }
    },
    processError: async (err, context) => {
      const inner = err && Array.isArray(err.errors) && err.errors.length ? err.errors[err.errors.length - 1] : err
      line({ error: { partition: context && context.partitionId, name: inner && inner.name,
                      code: (inner && inner.code) || null, condition: (inner && inner.condition) || null,
                      retryable: inner ? Boolean(inner.retryable) : null,
                      message: String(inner && inner.message) } })
    },
  }
  let position = earliestEventPosition
  if (start !== undefined) {
    position = start.startsWith('#') ? { sequenceNumber: Number(start.slice(1)) } : { offset: start }
  }
  const subscribeOptions = { startPosition: position, maxBatchSize: 50, maxWaitTimeInSeconds: 1 }
  const sub = partitionId === undefined
    ? client.subscribe(handlers, subscribeOptions)
    : client.subscribe(partitionId, handlers, subscribeOptions)
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  await sub.close()
  await client.close()
  line({ done: true })
}

const [mode, cs, hub, ...rest] = process.argv.slice(2)
const run = mode === 'properties' ? properties(cs, hub)
  : subscribe(cs, hub, Number(rest[0]), rest[1], rest[2])
run.then(() => process.exit(0), (err) => { line({ fatal: String((err && err.stack) || err) }); process.exit(1) })
