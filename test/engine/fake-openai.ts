// A small local chat-completions server for tests: answers with a scripted function of the
// request, and keeps every request body so tests can check what the adapter sent.
import { createServer, type Server } from 'node:http'

export type Reply =
  | { status?: number; body: unknown }
  | ((req: { messages: { role: string; content: string | null }[]; tools?: unknown[] }) => {
      status?: number
      body: unknown
    })

export function message(content: string | null, toolCalls?: { name: string; args: unknown }[]) {
  return {
    body: {
      choices: [
        {
          message: {
            role: 'assistant',
            content,
            ...(toolCalls
              ? {
                  tool_calls: toolCalls.map((c, i) => ({
                    id: `call_${i}`,
                    type: 'function',
                    function: { name: c.name, arguments: JSON.stringify(c.args) },
                  })),
                }
              : {}),
          },
        },
      ],
    },
  }
}

export async function fakeOpenAi(t: { teardown(fn: () => unknown): void }, replies: Reply[]) {
  const requests: {
    messages: { role: string; content: string | null }[]
    tools?: unknown[]
    model: string
  }[] = []
  let i = 0
  const server: Server = createServer((req, res) => {
    let data = ''
    req.on('data', (c) => (data += c))
    req.on('end', () => {
      const body = JSON.parse(data)
      requests.push(body)
      const r = replies[Math.min(i++, replies.length - 1)]!
      const out = typeof r === 'function' ? r(body) : r
      res.writeHead(out.status ?? 200, { 'content-type': 'application/json' })
      res.end(typeof out.body === 'string' ? out.body : JSON.stringify(out.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((r) => server.close(r)))
  const addr = server.address()
  const port = typeof addr === 'object' && addr ? addr.port : 0
  return { url: `http://127.0.0.1:${port}/v1`, requests }
}
