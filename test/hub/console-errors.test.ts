// A console page that fails unexpectedly, through the console's own error path (errors/fastify.ts
// installJsonErrors with the console's `send`): a real hub with its console on loopback, whose
// listing queue (what the overview reads beside the engine) is a plain file where a folder
// belongs, so reading it throws ENOTDIR inside the route. The owner gets the console's error page
// with a 500 and no detail; the hub's log gets the error object.
import { writeFile } from 'node:fs/promises'
import t from 'tap'
import { listingsDir } from '../../hub/listing/queue.ts'
import { logLines } from '../helpers/log-lines.ts'
import { ConsoleClient, startConsoleHub } from './console-helpers.ts'

t.test('a page that throws answers 500 with the error page, and the error reaches the log', async (t) => {
  const { log, lines } = logLines()
  const { hub, home, url } = await startConsoleHub(t, { log })
  const c = new ConsoleClient(url)
  t.equal((await c.signInWithLink(hub.console!.loginLink())).status, 200, 'signed in')
  t.equal((await c.get('/')).status, 200, 'the overview answers while the queue is readable')

  await writeFile(listingsDir(home), 'not a folder\n')
  const before = lines.length
  const r = await c.get('/')
  t.equal(r.status, 500)
  t.match(r.headers.get('content-type'), /^text\/html/, 'a page, not JSON')
  t.equal(r.headers.get('content-security-policy')?.includes("default-src 'none'"), true, 'with the CSP')
  const page = await r.text()
  t.match(page, /<h1>Request refused<\/h1>/)
  t.match(page, /the hub could not answer this request \(see the hub log\)/)
  t.notMatch(page, /ENOTDIR|scandir/, 'what failed stays in the log, not on the page')

  const logged = lines.slice(before).filter((l) => l.level >= 50)
  t.equal(logged.length, 1, 'one error line for the one failed request')
  t.match(logged[0], {
    level: 50,
    msg: 'GET / answered 500',
    method: 'GET',
    url: '/',
    status: 500,
    code: 'INTERNAL',
    err: { code: 'ENOTDIR', message: /ENOTDIR.*listings/, stack: /at / },
  })
})
