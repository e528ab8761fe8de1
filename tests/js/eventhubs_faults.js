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
// Prints one JSON object {cases: {...}, events: [...all read at the end...]} and exits 0;
// {"error": ...} and exit 1 on a failure of its own; gives up after 100 s.
'use strict'
const { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } = require('@azure/event-hubs')

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const [cs, hub, controlUrl, token] = process.argv.slice(2)
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

async function sendValues(values, retryOptions) {
  const client = new EventHubProducerClient(cs, hub, { retryOptions })
  const started = Date.now()
  try {
    const batch = await client.createBatch({ partitionId: '0' })
    for (const v of values) batch.tryAdd({ body: String(v) })
    await client.sendBatch(batch)
    return { ok: true, ms: Date.now() - started }
  } catch (err) {
    return { ok: false, ms: Date.now() - started, error: describe(err) }
  } finally {
    await client.close()
  }
}

const waitFor = async (predicate, ms) => {
  const until = Date.now() + ms
  while (!predicate() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50))
  return predicate()
}

// Subscribe from the start, wait for `before` events, set `fault`, send `more`, and see
// whether all `before + more.length` events arrive; what processError got.
async function receiveThrough(fault, before, more) {
  const client = new EventHubConsumerClient('$Default', cs, hub, { retryOptions: { maxRetries: 3, retryDelayInMs: 200 } })
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
  const timer = setTimeout(() => { out({ error: 'timeout after 100 s' }); process.exit(1) }, 100000)
  await control('DELETE')
  const cases = {}
  await control('POST', { kind: 'server-busy', scope: { hub }, count: 1 })
  cases['busy-retried'] = await sendValues([0], { maxRetries: 3, retryDelayInMs: 200 })
  await control('POST', { kind: 'server-busy', scope: { hub }, count: 1 })
  cases['busy-no-retry'] = await sendValues([-1], { maxRetries: 0 })
  cases['detach-receiver'] = await receiveThrough(
    { kind: 'detach-receiver', scope: { hub, consumer_group: '$Default' }, params: { condition: 'amqp:link:detach-forced' } },
    1, [1, 2])
  cases['forced-receiver'] = await receiveThrough({ kind: 'connection-forced', scope: { hub } }, 3, [3, 4])
  cases['stolen'] = await receiveThrough({ kind: 'link-stolen', scope: { hub } }, 5, [5, 6])
  const listing = await control('GET')
  await control('DELETE')
  clearTimeout(timer)
  out({ cases, fired: listing.fired.map((f) => f.kind) })
}

main().then(() => process.exit(0), (err) => { out({ error: String((err && err.stack) || err) }); process.exit(1) })
