// @azure/event-hubs (npm) against the emulator's AMQP port, for tests/amqp/test_sdk_js.py.
//
//   node eventhubs_sdk.js hash                                < {"keys": [...], "counts": [...]}
//   node eventhubs_sdk.js properties CONNECTION_STRING HUB
//   node eventhubs_sdk.js send CONNECTION_STRING HUB          < {"batches": [...]} | {"buffered": [...]}
//   node eventhubs_sdk.js receive CONNECTION_STRING HUB COUNT [PARTITION_ID]
//
// hash: the SDK's own partition-key mapper (the lookup3 code its buffered producer
//   uses to pick a partition), for every key and partition count.
// properties: getEventHubProperties, getPartitionIds and getPartitionProperties of each.
// send: with EventHubProducerClient, one sendBatch per {partitionId?, partitionKey?, events};
//   or ("buffered") with EventHubBufferedProducerClient, which maps each event's
//   partitionKey to a partition id itself and sends to that partition.
//   An event is {body, properties?, json?}: body is sent as UTF-8 bytes, or as the SDK's
//   JSON-encoded body when json is true.
// receive: getPartitionIds, then EventHubConsumerClient.subscribe (all partitions, or one)
//   from the earliest event until COUNT events arrived, then close.
//
// Prints one JSON object on stdout and exits 0; on failure prints {"error": ...} and
// exits 1; gives up after 50 s. DEBUG=azure*,rhea* shows the AMQP traffic on stderr.
// EH_WEBSOCKET and EH_CA (below) switch to AMQP over WebSockets.
'use strict'
const path = require('path')
const {
  EventHubBufferedProducerClient, EventHubConsumerClient, EventHubProducerClient, earliestEventPosition,
} = require('@azure/event-hubs')

// The mapper is not exported by the package ("exports" hides dist/); load it by file path.
const mapper = require(path.join(path.dirname(require.resolve('@azure/event-hubs')),
  'impl', 'partitionKeyToIdMapper.js'))

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
// core-amqp's retry throws an AggregateError whose own message is empty: show its errors.
const describe = (err) => (err && Array.isArray(err.errors) && err.errors.length
  ? `${err.name}: ${err.errors.map((e) => `${e.name} (${e.code}): ${e.message}`).join(' | ')}`
  : String((err && err.stack) || err))
const fail = (err) => { out({ error: describe(err) }); process.exit(1) }

function readStdin() {
  return new Promise((resolve, reject) => {
    let text = ''
    process.stdin.setEncoding('utf8')
    process.stdin.on('data', (chunk) => { text += chunk })
    process.stdin.on('end', () => resolve(text ? JSON.parse(text) : {}))
    process.stdin.on('error', reject)
  })
}

// Fail fast instead of retrying for minutes; the test reads the first error.
const clientOptions = { retryOptions: { maxRetries: 1, retryDelayInMs: 200, timeoutInMs: 20000 } }
// AMQP over WebSockets (always wss:// in the SDK): EH_WEBSOCKET=HOST:PORT of the broker's
// AMQPS listener, EH_CA the CA file to trust.
if (process.env.EH_WEBSOCKET) {
  const fs = require('fs')
  clientOptions.customEndpointAddress = `sb://${process.env.EH_WEBSOCKET}`
  clientOptions.webSocketOptions = {
    webSocket: require('ws'),
    webSocketConstructorOptions: { ca: fs.readFileSync(process.env.EH_CA) },
  }
}

// close() waits for the broker's answer to AMQP detach, end and close; fail clearly
// (not by the global timeout) when one does not come.
async function closeWithin(what, promise, ms = 10000) {
  let timer
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}.close() got no answer from the broker in ${ms} ms`)), ms)
  })
  try {
    await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

const toEventData = (e) => ({
  body: e.json ? e.body : Buffer.from(e.body, 'utf8'),
  ...(e.properties ? { properties: e.properties } : {}),
})

function hash(input) {
  return {
    mapped: input.keys.map((key) => ({
      key,
      hash: mapper.hashPartitionKey(key),
      partitions: Object.fromEntries(input.counts.map((n) => [n, mapper.mapPartitionKeyToId(key, n)])),
    })),
  }
}

// Run fn(client), then close the client; an error of fn wins over one of close.
async function withClient(name, client, fn, closeArg) {
  let result
  try {
    result = await fn(client)
  } catch (err) {
    await closeWithin(name, client.close(closeArg)).catch(() => {})
    throw err
  }
  await closeWithin(name, client.close(closeArg))
  return result
}

function properties(cs, hub) {
  return withClient('EventHubProducerClient', new EventHubProducerClient(cs, hub, clientOptions), async (client) => {
    const props = await client.getEventHubProperties()
    const ids = await client.getPartitionIds()
    const partitions = []
    for (const id of ids) {
      const p = await client.getPartitionProperties(id)
      partitions.push({ ...p, lastEnqueuedOnUtc: p.lastEnqueuedOnUtc && p.lastEnqueuedOnUtc.toISOString() })
    }
    return { name: props.name, createdOn: props.createdOn.toISOString(), partitionIds: props.partitionIds, ids, partitions }
  })
}

async function send(cs, hub, input) {
  if (input.buffered) {
    const errors = []
    const client = new EventHubBufferedProducerClient(cs, hub, {
      onSendEventsErrorHandler: (ctx) => { errors.push(String(ctx.error)) },
      maxWaitTimeInMs: 200,
      ...clientOptions,
    })
    return withClient('EventHubBufferedProducerClient', client, async () => {
      for (const e of input.buffered) {
        await client.enqueueEvent(toEventData(e), { partitionKey: e.partitionKey })
      }
      await client.flush()
      if (errors.length) throw new Error(`buffered send failed: ${errors.join('; ')}`)
      return { sent: input.buffered.length }
    }, { flush: true })
  }
  return withClient('EventHubProducerClient', new EventHubProducerClient(cs, hub, clientOptions), async (client) => {
    let sent = 0
    for (const b of input.batches) {
      const options = {}
      if (b.partitionId !== undefined) options.partitionId = b.partitionId
      if (b.partitionKey !== undefined) options.partitionKey = b.partitionKey
      const batch = await client.createBatch(options)
      for (const e of b.events) {
        if (!batch.tryAdd(toEventData(e))) throw new Error('event does not fit the batch')
      }
      await client.sendBatch(batch)
      sent += batch.count
    }
    return { sent }
  })
}

function receive(cs, hub, count, partitionId) {
  const client = new EventHubConsumerClient(EventHubConsumerClient.defaultConsumerGroupName, cs, hub, clientOptions)
  return withClient('EventHubConsumerClient', client, async () => {
    // What subscribe's load balancing asks first; its errors are only logged there.
    const partitionIds = await client.getPartitionIds()
    const events = []
    const errors = []
    let finish
    const finished = new Promise((resolve) => { finish = resolve })
    const handlers = {
      processEvents: async (received, context) => {
        for (const e of received) {
          events.push({
            partitionId: context.partitionId,
            body: Buffer.isBuffer(e.body) ? e.body.toString('utf8') : e.body,
            properties: e.properties || {},
            partitionKey: e.partitionKey === undefined ? null : e.partitionKey,
            offset: e.offset,
            sequenceNumber: e.sequenceNumber,
            enqueuedTimeUtc: e.enqueuedTimeUtc && e.enqueuedTimeUtc.toISOString(),
          })
        }
        if (events.length >= count) finish()
      },
      processError: async (err, context) => {
        errors.push(`partition ${context.partitionId}: ${err && (err.code || err.name)}: ${err && err.message}`)
      },
    }
    const options = { startPosition: earliestEventPosition, maxBatchSize: 50, maxWaitTimeInSeconds: 1,
                      skipParsingBodyAsJson: true }
    const subscription = partitionId === undefined
      ? client.subscribe(handlers, options)
      : client.subscribe(partitionId, handlers, options)
    const timer = setTimeout(finish, 30000)
    await finished
    clearTimeout(timer)
    if (events.length < count) {
      await closeWithin('Subscription', subscription.close()).catch(() => {})
      throw new Error(`received ${events.length} of ${count} events in 30 s; errors: ${JSON.stringify(errors.slice(0, 5))}`)
    }
    await closeWithin('Subscription', subscription.close())
    return { partitionIds, events, errors }
  })
}

async function main() {
  const [command, cs, hub, ...rest] = process.argv.slice(2)
  const timer = setTimeout(() => fail(`timeout after 50 s (${command})`), 50000)
  let result
  if (command === 'hash') result = hash(await readStdin())
  else if (command === 'properties') result = await properties(cs, hub)
  else if (command === 'send') result = await send(cs, hub, await readStdin())
  else if (command === 'receive') result = await receive(cs, hub, parseInt(rest[0], 10), rest[1])
  else throw new Error(`unknown command ${command}`)
  clearTimeout(timer)
  out(result)
  // Every client is closed by now (withClient awaits close()), but the buffered
  // producer's partition-id refresh timer would keep node alive ~10 s more.
  process.exit(0)
}

main().catch(fail)
