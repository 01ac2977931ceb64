// Concurrent publishers for the broker benches: each client publishes `each` messages
// `<prefix><p>` / `<p>:<j>` with `window` publishes in flight at once, in order per client.
import type { MqttClient } from 'mqtt'

export async function publishInLanes(
  clients: readonly MqttClient[],
  prefix: string,
  each: number,
  window: number,
  qos: 0 | 1 | 2,
): Promise<void> {
  await Promise.all(
    clients.map(async (c, p) => {
      let next = 0
      const lane = async (): Promise<void> => {
        while (next < each) {
          const j = next++
          await c.publishAsync(`${prefix}${p}`, `${p}:${j}`, { qos })
        }
      }
      await Promise.all(Array.from({ length: window }, lane))
    }),
  )
}
