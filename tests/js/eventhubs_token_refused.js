// @azure/event-hubs meeting token-refused: its token renewals answered 401 while its
// first put-token was served; for tests/amqp/test_faults_js.py.
//
//   node eventhubs_token_refused.js CONNECTION_STRING HUB CONTROL_URL TOKEN JWT
//
// The client is made from the connection string (the emulator's plain AMQP), then given
// a TokenCredential handing out JWT with an expiry 124 s ahead: the SDK renews a bearer
// token 2 minutes before it expires, so every ~4 s. It sends one event a second until two
// renewals were refused and once more (30 s at most), then prints {sends: [...],
// renewals: N, fired: [...]}; exit 1 on its own failure.
'use strict'
const { EventHubProducerClient } = require('@azure/event-hubs')

const [cs, hub, controlUrl, token, jwt] = process.argv.slice(2)
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

async function control(method, body) {
  const res = await fetch(`${controlUrl}/$faults`, {
    method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`/$faults ${method} answered ${res.status}: ${text}`)
  return text ? JSON.parse(text) : null
}

async function main() {
  const timer = setTimeout(() => { out({ error: 'timeout after 60 s' }); process.exit(1) }, 60000)
  await control('DELETE')
  await control('POST', { kind: 'token-refused', scope: { hub }, count: 1000 })
  let issued = 0
  const credential = { getToken: async () => { issued += 1; return { token: jwt, expiresOnTimestamp: Date.now() + 124000 } } }
  const client = new EventHubProducerClient(cs, hub, { retryOptions: { maxRetries: 1, timeoutInMs: 5000 } })
  client._context.tokenCredential = credential // a bearer token, renewed every ~4 s
  const sends = []
  const started = Date.now()
  try {
    // until two renewals were refused (issued 3) and one more send followed them
    for (let i = 0, after = 0; after < 1 && Date.now() - started < 30000; i++) {
      if (issued >= 3) after += 1
      const t = Date.now()
      try {
        await client.sendBatch([{ body: String(i) }], { partitionId: '0' })
        sends.push({ ok: true, ms: Date.now() - t })
      } catch (err) {
        sends.push({ ok: false, code: err.code, message: String(err.message).slice(0, 200) })
      }
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  } finally {
    await client.close()
  }
  const listing = await control('GET')
  await control('DELETE')
  clearTimeout(timer)
  out({ sends, issued, fired: listing.fired.map((f) => f.kind) })
}

main().then(() => process.exit(0), (err) => { out({ error: String((err && err.stack) || err) }); process.exit(1) })
