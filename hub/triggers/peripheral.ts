// Peripheral trigger: a board's `message` event, published by the bridge on
// `boards/<board>/<signal>` with the event's text as the payload (hub/DESIGN.md, "MQTT topics").
// The router never reads the bridge: it sees only what reached the broker.
import { boardTopic } from '../../mqtt/topics.ts'
import type { PeripheralTrigger } from '../../sops/types.ts'

export function peripheralFilter(t: Pick<PeripheralTrigger, 'board' | 'signal'>): string {
  return boardTopic(t.board, t.signal)
}
