// @azure/event-hubs against faults it injects itself, through the fault control API
// (/$faults on the HTTP listener) of a broker it did not start; for
// tests/amqp/test_faults_js.py.
//
//   node eventhubs_faults.js CONNECTION_STRING HUB CONTROL_URL TOKEN
//
// CONTROL_URL is the broker's HTTP listener, TOKEN the subscription's credential
// (`kafka-wire token --management`). HUB has one partition and no events. Each case sets
// one fault with fetch(), runs the SDK into it and notes what the SDK did:
//   busy-retried:    server-busy once, sendBatch with the default retries
//   busy-no-retry:   server-busy once, maxRetries 0
//   detach-receiver: a receiver detached with amqp:link:detach-forced mid-stream
//   forced-receiver: a receiver's connection closed with amqp:connection:forced
//   stolen:          a receiver detached with amqp:link:stolen
//   append-fail-*, unavailable-*, quota-exceeded, detach-sender, forced-sender, cbs-fail:
//                    a send meeting that fault, with retries or (-no-retry) without
//   append-slow:     a send whose append is held 1.5 s
//   delayed, withheld: a send whose disposition is held 1.5 s, or withheld past the
//                    send's timeout (maxRetries 0)
//   withhold-flow-sender: a sender's credit taken back for 2.5 s, then a second send
//   management-fail: getPartitionIds meeting a $management read answered 503
//   unavailable-receiver: a subscription whose first two attaches are refused
//   withhold-flow-receiver: a receiver given no events for 2.5 s mid-stream
// Prints one JSON object {cases: {...}, events: [...all read at the end...], tryMs, claimMs}
// and exits 0; {"error": ...} and exit 1 on a failure of its own; gives up after 200 s.
// KAFKA_WIRE_SOAK=1 (make soak) runs the SDK's own timings: a 5 s try for the cut sends and
// the 10 s load-balancing interval for the stolen receiver's reclaim; else 2.5 s and 1 s.
'use strict'
const { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } = require('@azure/event-hubs')

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const [cs, hub, controlUrl, token] = process.argv.slice(2)
const SOAK = !['', '0', undefined].includes(process.env.KAFKA_WIRE_SOAK)
const TRY_MS = SOAK ? 5000 : 2500
const CLAIM_MS = SOAK ? 10000 : 1000
const describe = (err) => ({ name: err && err.name, code: err && err.code, retryable: err && err.retryable,
  message: String(err && err.message).slice(0, 300) })

async function control(method, body) {
  const res = await fetch(`${controlUrl}/$faults`, {
    method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`/$faults ${method} answered ${res.status}: ${text}`)
  return text ? JSON.parse(text) : null
}

async function sendValues(values, retryOptions, client = null) {
  const own = client === null
  if (own) client = new EventHubProducerClient(cs, hub, { retryOptions })
  const started = Date.now()
  try {
    const batch = await client.createBatch({ partitionId: '0' })
    for (const v of values) batch.tryAdd({ body: String(v) })
    await client.sendBatch(batch)
    return { ok: true, ms: Date.now() - started }
  } catch (err) {
    return { ok: false, ms: Date.now() - started, error: describe(err) }
  } finally {
    if (own) await client.close()
  }
}

// Sends on one client, the second after `fault` is set (and a third, if given), timed.
async function sendTwice(fault, first, second, retryOptions, third = null) {
  const client = new EventHubProducerClient(cs, hub, { retryOptions })
  try {
    const before = await sendValues(first, retryOptions, client)
    if (!before.ok) throw new Error(`the send before the fault failed: ${JSON.stringify(before)}`)
    await control('POST', fault)
    const after = await sendValues(second, retryOptions, client)
    if (third !== null) after.third = await sendValues(third, retryOptions, client)
    return after
  } finally {
    await client.close()
  }
}

// Subscribe from the start with `fault` set first; what arrived and what processError got.
async function receiveFresh(fault, count) {
  await control('POST', fault)
  const client = new EventHubConsumerClient('$Default', cs, hub, { retryOptions: { maxRetries: 5, retryDelayInMs: 200 } })
  const events = []
  const errors = []
  const started = Date.now()
  const sub = client.subscribe('0', {
    processEvents: async (received) => { for (const e of received) events.push(Number(Buffer.from(e.body).toString('utf8'))) },
    processError: async (err) => { errors.push(describe(err)) },
  }, { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 })
  try {
    const all = await waitFor(() => events.length >= count, 20000)
    return { complete: all, ms: Date.now() - started, events: [...events], errors }
  } finally {
    await sub.close()
    await client.close()
  }
}

// A receiver that read everything (up to 115) meets withhold-flow at its next events,
// 120 and 121: how long after the send they arrived, in what order, with what errors.
async function withheldReceiver() {
  const client = new EventHubConsumerClient('$Default', cs, hub, { retryOptions: { maxRetries: 3, retryDelayInMs: 200 } })
  const events = []
  const errors = []
  const sub = client.subscribe('0', {
    processEvents: async (received) => { for (const e of received) events.push(Number(Buffer.from(e.body).toString('utf8'))) },
    processError: async (err) => { errors.push(describe(err)) },
  }, { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 })
  try {
    if (!await waitFor(() => events.includes(115), 20000)) throw new Error(`115 not read: ${events}`)
    await control('POST', { kind: 'withhold-flow', scope: { hub, consumer_group: '$Default' }, params: { ms: 2500 } })
    const at = events.length
    const sent = Date.now()
    const done = await sendValues([120, 121], { maxRetries: 3, retryDelayInMs: 200 })
    if (!done.ok) throw new Error(`sending 120, 121 failed: ${JSON.stringify(done)}`)
    const complete = await waitFor(() => events.includes(121), 15000)
    return { complete, ms: Date.now() - sent, after: events.slice(at), errors }
  } finally {
    await sub.close()
    await client.close()
  }
}

// Every event of the partition, read from the start through its last enqueued one.
async function readAll() {
  const client = new EventHubConsumerClient('$Default', cs, hub)
  const { lastEnqueuedSequenceNumber: last } = await client.getPartitionProperties('0')
  const events = []
  let upto = -1
  const sub = client.subscribe('0', {
    processEvents: async (received) => { for (const e of received) { events.push(Number(Buffer.from(e.body).toString('utf8'))); upto = e.sequenceNumber } },
    processError: async () => {},
  }, { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 })
  const complete = await waitFor(() => upto >= last, 30000)
  await sub.close()
  await client.close()
  if (!complete) throw new Error(`read through ${upto} of ${last}: ${events}`)
  return events
}

const waitFor = async (predicate, ms) => {
  const until = Date.now() + ms
  while (!predicate() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50))
  return predicate()
}

// Subscribe from the start, wait for `before` events, set `fault`, send `more`, and see
// whether all `before + more.length` events arrive; what processError got. The subscription
// claims its partition again (after a stolen link) every `claimMs`.
async function receiveThrough(fault, before, more, claimMs = 10000) {
  const client = new EventHubConsumerClient('$Default', cs, hub, { retryOptions: { maxRetries: 3, retryDelayInMs: 200 },
    loadBalancingOptions: { updateIntervalInMs: claimMs } })
  const events = []
  const errors = []
  const sub = client.subscribe('0', {
    processEvents: async (received) => { for (const e of received) events.push(Number(Buffer.from(e.body).toString('utf8'))) },
    processError: async (err) => { errors.push(describe(err)) },
  }, { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 })
  try {
    if (!await waitFor(() => events.length >= before, 20000)) throw new Error(`only ${events.length} of ${before} before the fault`)
    await control('POST', fault)
    const sent = await sendValues(more, { maxRetries: 3, retryDelayInMs: 200 })
    if (!sent.ok) throw new Error(`sending after the fault failed: ${JSON.stringify(sent)}`)
    const all = await waitFor(() => events.length >= before + more.length, 15000)
    return { complete: all, events: [...events], errors }
  } finally {
    await sub.close()
    await client.close()
  }
}

async function main() {
  const timer = setTimeout(() => { out({ error: 'timeout after 200 s' }); process.exit(1) }, 200000)
  await control('DELETE')
  const cases = {}
  await control('POST', { kind: 'server-busy', scope: { hub }, count: 1 })
  cases['busy-retried'] = await sendValues([0], { maxRetries: 3, retryDelayInMs: 200 })
  await control('POST', { kind: 'server-busy', scope: { hub }, count: 1 })
  cases['busy-no-retry'] = await sendValues([-1], { maxRetries: 0 })
  cases['detach-receiver'] = await receiveThrough(
    { kind: 'detach-receiver', scope: { hub, consumer_group: '$Default' }, params: { condition: 'amqp:link:detach-forced' } },
    1, [1, 2])
  // scoped to the consumer group: a send (no consumer group) does not match it, so it meets
  // the receiver, not the send of 3 and 4
  cases['forced-receiver'] = await receiveThrough(
    { kind: 'connection-forced', scope: { hub, consumer_group: '$Default' } }, 3, [3, 4])
  cases['stolen'] = await receiveThrough({ kind: 'link-stolen', scope: { hub } }, 5, [5, 6], CLAIM_MS)
  const retry = { maxRetries: 3, retryDelayInMs: 200 }
  const once = async (name, fault, value, retryOptions) => {
    await control('POST', fault)
    cases[name] = await sendValues([value], retryOptions)
    process.stderr.write(`${name}: ${JSON.stringify(cases[name]).slice(0, 400)}\n`)
  }
  const step = async (name, promise) => {
    cases[name] = await promise
    process.stderr.write(`${name}: ${JSON.stringify(cases[name]).slice(0, 400)}\n`)
  }
  await once('append-fail-retried', { kind: 'append-fail', scope: { hub } }, 100, retry)
  await once('append-fail-no-retry', { kind: 'append-fail', scope: { hub }, params: { error: 'io-error' } }, 101, { maxRetries: 0 })
  await once('unavailable-retried', { kind: 'partition-unavailable', scope: { hub }, count: 2 }, 102, retry)
  await once('unavailable-no-retry', { kind: 'partition-unavailable', scope: { hub } }, 103, { maxRetries: 0 })
  await once('quota-exceeded', { kind: 'quota-exceeded', scope: { hub } }, 104, retry)
  // a send in flight when its link or connection is cut waits out its try's timeout
  // (rhea logs "unrecognised outcome: null"), then is retried: TRY_MS here, 60 s by default
  const shortTry = { ...retry, timeoutInMs: TRY_MS }
  await step('detach-sender', sendTwice({ kind: 'detach-sender', scope: { hub } }, [105], [106], shortTry))
  await step('forced-sender', sendTwice({ kind: 'connection-forced', scope: { hub } }, [107], [108], shortTry))
  await once('cbs-fail', { kind: 'cbs-fail', scope: { hub } }, 109, retry)
  await once('delayed', { kind: 'delay-disposition', scope: { hub }, params: { ms: 1500 } }, 110, retry)
  await once('withheld', { kind: 'delay-disposition', scope: { hub }, params: { ms: 600000 } }, 111, { maxRetries: 0, timeoutInMs: 3000 })
  await once('append-slow', { kind: 'append-slow', scope: { hub }, params: { ms: 1500 } }, 112, retry)
  // the fault fires at the send of 114, the credit is taken back after it: 115 waits
  await step('withhold-flow-sender', sendTwice({ kind: 'withhold-flow', scope: { hub }, params: { ms: 2500 } }, [113], [114], retry, [115]))
  await control('POST', { kind: 'management-fail', scope: { hub } })
  await step('management-fail', (async () => {
    const client = new EventHubProducerClient(cs, hub, { retryOptions: retry })
    const started = Date.now()
    try { return { ok: true, ids: await client.getPartitionIds(), ms: Date.now() - started } } catch (err) { return { ok: false, error: describe(err) } } finally { await client.close() }
  })())
  await step('unavailable-receiver', receiveFresh({ kind: 'partition-unavailable', scope: { hub, consumer_group: '$Default' }, count: 2 }, 7))
  await step('withhold-flow-receiver', withheldReceiver())
  const listing = await control('GET')
  await control('DELETE')
  const stored = await readAll()
  clearTimeout(timer)
  out({ cases, fired: listing.fired.map((f) => f.kind), stored, tryMs: TRY_MS, claimMs: CLAIM_MS })
}

main().then(() => process.exit(0), (err) => { out({ error: String((err && err.stack) || err) }); process.exit(1) })
