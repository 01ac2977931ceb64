// The hub's own publishes on its embedded broker go straight into Aedes (`aedes.publish`) rather
// than through its MQTT session over loopback: no packet to write, send, parse and acknowledge for
// each `mqtt_publish` step and each svc/ state message. Aedes calls back once a QoS 1 message is
// stored for every persistent subscriber and retained where asked, which is what the session's
// PUBACK meant (ack-after-store.ts). No ACL check applies: the hub's own login may publish on any
// topic (auth.ts), and these are the hub's own messages.
// A QoS 0 message that is not retained and that nobody would get (no subscribed client, no
// trigger: `heard`) is dropped here, as the broker would drop it (subscribers.ts).
import type { Aedes } from 'aedes'

export type DirectPublish = (
  topic: string,
  payload: string | Buffer,
  opts: { qos: 0 | 1 | 2; retain: boolean },
) => Promise<void>

export function directPublish(aedes: Aedes, heard: (topic: string) => boolean): DirectPublish {
  return (topic, payload, opts) =>
    new Promise<void>((resolve, reject) => {
      if (opts.qos === 0 && !opts.retain && !heard(topic)) return resolve()
      aedes.publish(
        {
          cmd: 'publish',
          topic,
          payload: typeof payload === 'string' ? Buffer.from(payload) : payload,
          qos: opts.qos,
          retain: opts.retain,
          dup: false,
        },
        (err) => (err ? reject(err) : resolve()),
      )
    })
}
