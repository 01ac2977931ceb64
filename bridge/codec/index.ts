// The shared line codec: framing with a cap, and line ↔ message. Pure.
export * from './framer.ts'
export * from './line.ts'
export * from './messages.ts'
export * from './protocol.ts'
