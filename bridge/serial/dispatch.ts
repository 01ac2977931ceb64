// One line from a board → what it means. bridge/README.md, "The board line protocol": `hello` names the
// board, `message` becomes an MQTT event, `{"id",…}` answers a command; anything else is
// garbage, counted and reported at a bounded rate by the sink, never thrown.
import { decodeBoardLine, preview, type Reply } from '../codec/index.ts'
import type { HelloEvent } from '../codec/messages.ts'

export interface LineSink {
  message(signal: string, text: string): void
  hello(hello: HelloEvent): void
  reply(r: Reply): void
  garbage(error: string, preview: string): void
}

export function dispatchLine(line: Uint8Array, sink: LineSink): void {
  const d = decodeBoardLine(line)
  if (!d.ok) return sink.garbage(d.error, preview(line))
  const v = d.value
  switch (v.kind) {
    case 'message':
      return sink.message(v.message.signal, v.message.text)
    case 'hello':
      return sink.hello(v.hello)
    case 'reply':
      return sink.reply(v.reply)
  }
}
