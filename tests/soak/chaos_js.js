// @azure/event-hubs producer and consumer for tests/soak/test_chaos_soak.py, against a
// broker in chaos mode (kafka-wire serve --chaos SEED):
//
//   node chaos_js.js CONNECTION_STRING HUB PARTITIONS COUNT DEADLINE_S
//
// Sends COUNT events "j-NNNNNN" in batches of 5 to partition i % PARTITIONS (a batch the
// SDK gives up on is sent again: {"sent"} again), and reads the hub from its start until
// stdin closes. One JSON object a line: {"sent": [ids]}, {"acked": [ids], "partition": p},
// {"failed": [ids], "error": ...}, {"read": [[partition, sequenceNumber, body], ...]},
// {"error": ...} from processError, {"producer": "done"}, and {"done": true} at the end.
'use strict'
const { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } = require('@azure/event-hubs')

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
const [cs, hub, partitionsText, countText, deadlineText] = process.argv.slice(2)
const partitions = Number(partitionsText)
const count = Number(countText)
const deadline = Date.now() + Number(deadlineText) * 1000
// timeoutInMs: a send in flight when its link or connection is closed is not settled, and
// the SDK waits for it this long (60 s by default) before it sends again.
const retryOptions = { maxRetries: 5, retryDelayInMs: 200, maxRetryDelayInMs: 2000, timeoutInMs: 10000 }
const describe = (err) => String((err && (err.code || err.name)) || err) + ': ' + String(err && err.message).slice(0, 200)

async function produce() {
  const client = new EventHubProducerClient(cs, hub, { retryOptions })
  // Batches spread over three quarters of the time given (a soak, not a burst).
  const interval = 0.75 * (deadline - Date.now()) / Math.max(count / 5, 1)
  let next = Date.now()
  try {
    for (let i = 0; i < count && Date.now() < deadline; i += 5) {
      next += interval
      if (next > Date.now()) await new Promise((resolve) => setTimeout(resolve, next - Date.now()))
      const partitionId = String((i / 5) % partitions)
      const ids = []
      for (let j = i; j < Math.min(i + 5, count); j++) ids.push('j-' + String(j).padStart(6, '0'))
      for (let attempt = 0; attempt < 30 && Date.now() < deadline; attempt++) {
        out({ sent: ids })
        try {
          const batch = await client.createBatch({ partitionId })
          // A Buffer goes as raw bytes (a string body would be JSON-encoded, with its quotes)
          for (const id of ids) batch.tryAdd({ body: Buffer.from(id) })
          await client.sendBatch(batch)
          out({ acked: ids, partition: Number(partitionId) })
          break
        } catch (err) {
          out({ failed: ids, error: describe(err) })
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      }
    }
  } finally {
    await client.close()
    out({ producer: 'done' })
  }
}

async function main() {
  const consumer = new EventHubConsumerClient('$Default', cs, hub, {
    retryOptions, loadBalancingOptions: { strategy: 'greedy', updateIntervalInMs: 1000 } })
  const sub = consumer.subscribe({
    processEvents: async (events, context) => {
      if (events.length) out({ read: events.map((e) => [Number(context.partitionId), e.sequenceNumber, String(e.body)]) })
    },
    processError: async (err) => { out({ error: describe(err) }) },
  }, { startPosition: earliestEventPosition, maxBatchSize: 100, maxWaitTimeInSeconds: 1 })
  const stdinClosed = new Promise((resolve) => { process.stdin.on('end', resolve); process.stdin.on('close', resolve); process.stdin.resume() })
  const timer = new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()) + 120000))
  await produce()
  await Promise.race([stdinClosed, timer])
  await sub.close()
  await consumer.close()
  out({ done: true })
}

main().then(() => process.exit(0), (err) => { out({ error: 'fatal: ' + String((err && err.stack) || err) }); process.exit(1) })
