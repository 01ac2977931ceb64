// socat pty pairs for tests; skipped with the reason when socat is missing.
import { haveSocat } from '../../boards/simulator/pty-pair.ts'
export { startPtyPair, type PtyPair } from '../../boards/simulator/pty-pair.ts'

export const noSocat: false | string = haveSocat()
  ? false
  : 'socat is not installed (apt-get install socat): the pseudo-terminal test needs it'
