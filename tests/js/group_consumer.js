// A kafkajs 2 group consumer for tests/groups/test_kafkajs_group.py.
//
//   node group_consumer.js BOOTSTRAP GROUP TOPIC COUNT
//
// Joins GROUP, consumes TOPIC from the beginning until COUNT messages arrived,
// commits (kafkajs auto-commit, flushed on disconnect) and exits 0. Prints one
// JSON object per line: {"event":"joined",...}, {"event":"message",...}, {"event":"done"}.
// Exits 1 with {"event":"error"} on failure or after 60 s.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, groupId, topic, countArg] = process.argv.slice(2)
const want = parseInt(countArg, 10)
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

const kafka = new Kafka({
  clientId: 'kafkajs-group-test',
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  retry: { retries: 5, initialRetryTime: 100 },
})
const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 })

async function main() {
  const timer = setTimeout(() => { out({ event: 'error', error: 'timeout after 60 s' }); process.exit(1) }, 60000)
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    out({ event: 'joined', memberId: e.payload.memberId, leaderId: e.payload.leaderId,
          isLeader: e.payload.isLeader, assignment: e.payload.memberAssignment })
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let seen = 0
  let finish
  const finished = new Promise((resolve) => { finish = resolve })
  await consumer.run({
    autoCommit: true,
    eachMessage: async ({ partition, message }) => {
      out({ event: 'message', partition, offset: Number(message.offset), value: message.value.toString() })
      seen += 1
      if (seen >= want) finish()
    },
  })
  await finished
  await consumer.disconnect() // commits the resolved offsets and leaves the group
  clearTimeout(timer)
  out({ event: 'done', count: seen })
}

main().catch((err) => { out({ event: 'error', error: String(err && err.stack || err) }); process.exit(1) })
