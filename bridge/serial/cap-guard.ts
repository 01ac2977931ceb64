// The line cap, enforced in front of @serialport/parser-delimiter. The delimiter parser keeps
// everything up to the next delimiter in memory, so a board that never sends `\n` would grow it
// without bound (bridge/README.md, "The board line protocol": never buffered without bound). This
// transform frames with the capped framer and passes on only whole lines, each ending in `\n`,
// so the delimiter parser behind it never holds a partial line at all. `onOversized` hears of
// each line dropped for its length (with the running count), so the drop is logged, not only counted.
import { Transform, type TransformCallback } from 'node:stream'
import type { LineFramer } from '../codec/index.ts'

export function createCapGuard(framer: LineFramer, onOversized?: (count: number) => void): Transform {
  let oversized = framer.counts().oversized
  return new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      const parts: Buffer[] = []
      framer.push(chunk, (line) => {
        parts.push(line, NL)
      })
      if (onOversized) {
        const now = framer.counts().oversized
        if (now !== oversized) {
          oversized = now
          onOversized(now)
        }
      }
      cb(null, parts.length > 0 ? Buffer.concat(parts) : undefined)
    },
  })
}

const NL = Buffer.from('\n')
