// mqtt_publish: publish one message on the hub's broker (embedded or external). The client is
// injected as a port: the same tool publishes through whatever the hub connected to.
import type { XStatic } from 'typebox/schema'
import { fail } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'
import type { Tool, ToolResult } from './types.ts'
import { topicError } from '../mqtt/topics.ts'

export const MqttPublishArgs = {
  type: 'object',
  required: ['topic', 'payload'],
  properties: {
    topic: { type: 'string', minLength: 1, maxLength: 1024 },
    /** A string is sent as is; any other JSON value is sent as its JSON text. */
    payload: {},
    qos: {
      anyOf: [
        { type: 'number', const: 0 },
        { type: 'number', const: 1 },
        { type: 'number', const: 2 },
      ],
    },
    retain: { type: 'boolean' },
  },
  additionalProperties: false,
} as const
export type MqttPublishArgs = XStatic<typeof MqttPublishArgs>

export const MAX_PUBLISH_BYTES = 256 * 1024

export type PublishPort = (
  topic: string,
  payload: string,
  /** `repeat`: this publish may have gone out before a restart (ToolContext.repeat). */
  opts: { qos: 0 | 1 | 2; retain: boolean; repeat?: boolean },
) => Promise<void>

/** The MQTT 5 user property on a publish that may repeat one made before a restart. */
export const REPEAT_PROPERTY = 'svc-repeat'

export function createMqttPublish(publish: PublishPort): Tool {
  return {
    name: 'mqtt_publish',
    description:
      'Publish a message to an MQTT topic on the hub broker. Output: { topic, bytes, repeat? } (repeat: it may have been published before a restart).',
    schema: MqttPublishArgs,
    async run(raw, ctx): Promise<ToolResult> {
      const args = raw as unknown as MqttPublishArgs
      const bad = topicError(args.topic)
      if (bad) return fail('BAD_INPUT', `mqtt_publish: topic "${args.topic}" ${bad}`)
      const text = typeof args.payload === 'string' ? args.payload : JSON.stringify(args.payload ?? null)
      const bytes = Buffer.byteLength(text)
      if (bytes > MAX_PUBLISH_BYTES)
        return fail('TOO_LARGE', `mqtt_publish: payload is ${bytes} bytes, more than ${MAX_PUBLISH_BYTES}`)
      try {
        const repeat = ctx?.repeat === true
        await publish(args.topic, text, {
          qos: args.qos ?? 1,
          retain: args.retain ?? false,
          ...(repeat ? { repeat } : {}),
        })
        return { ok: true, output: { topic: args.topic, bytes, ...(repeat ? { repeat } : {}) } }
      } catch (err) {
        return fail('UNREACHABLE', `mqtt_publish ${args.topic}: ${errorText(err)}`)
      }
    },
  }
}
