// A Firmata board profile: which pins become which signals. Firmata boards run stock
// StandardFirmata, so the hub, not the firmware, decides what an event is. Each pin produces the
// same `boards/<board>/<signal>` events as a companion-firmware board.
// hub.toml's checks embed this schema, so it is a JSON Schema literal (typed by typebox/schema's
// XStatic) and imports only the name pattern: loading it must not load the line codec or
// typebox's Type builders into a hub without boards (hub/DESIGN.md, "Keeping idle memory down").
import type { XStatic } from 'typebox/schema'
import { NAME_PATTERN } from '../codec/names.ts'

const Pin = {
  anyOf: [
    { type: 'integer', minimum: 0, maximum: 127 },
    { type: 'string', pattern: '^A[0-9]{1,2}$' },
  ],
} as const

export const DigitalSignal = {
  type: 'object',
  required: ['signal', 'type', 'pin'],
  properties: {
    signal: { type: 'string', pattern: NAME_PATTERN },
    type: { type: 'string', const: 'digital' },
    pin: Pin,
    /** Report 1 for LOW (buttons to ground with a pull-up). */
    invert: { type: 'boolean' },
  },
  additionalProperties: false,
} as const

export const AnalogSignal = {
  type: 'object',
  required: ['signal', 'type', 'pin'],
  properties: {
    signal: { type: 'string', pattern: NAME_PATTERN },
    type: { type: 'string', const: 'analog' },
    pin: Pin,
    /** Smallest change (raw 0–1023 units) that is reported; default 1. */
    threshold: { type: 'integer', minimum: 1, maximum: 1023 },
    /** Sampling interval in ms; default 100. */
    intervalMs: { type: 'integer', minimum: 10, maximum: 3_600_000 },
  },
  additionalProperties: false,
} as const

export const FirmataProfile = {
  type: 'object',
  required: ['signals'],
  properties: {
    signals: { type: 'array', items: { anyOf: [DigitalSignal, AnalogSignal] }, minItems: 1, maxItems: 64 },
  },
  additionalProperties: false,
} as const
export type FirmataProfile = XStatic<typeof FirmataProfile>
export type ProfileSignal = FirmataProfile['signals'][number]
