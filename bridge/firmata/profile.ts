// A Firmata board profile: which pins become which signals. Firmata boards run stock
// StandardFirmata, so the hub, not the firmware, decides what an event is. Each pin produces the
// same `boards/<board>/<signal>` events as a companion-firmware board.
import { Type, type Static } from 'typebox'
import { NAME_PATTERN } from '../codec/index.ts'

const Pin = Type.Union([Type.Integer({ minimum: 0, maximum: 127 }), Type.String({ pattern: '^A[0-9]{1,2}$' })])

export const DigitalSignal = Type.Object(
  {
    signal: Type.String({ pattern: NAME_PATTERN }),
    type: Type.Literal('digital'),
    pin: Pin,
    /** Report 1 for LOW (buttons to ground with a pull-up). */
    invert: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const AnalogSignal = Type.Object(
  {
    signal: Type.String({ pattern: NAME_PATTERN }),
    type: Type.Literal('analog'),
    pin: Pin,
    /** Smallest change (raw 0–1023 units) that is reported; default 1. */
    threshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 1023 })),
    /** Sampling interval in ms; default 100. */
    intervalMs: Type.Optional(Type.Integer({ minimum: 10, maximum: 3_600_000 })),
  },
  { additionalProperties: false },
)

export const FirmataProfile = Type.Object(
  { signals: Type.Array(Type.Union([DigitalSignal, AnalogSignal]), { minItems: 1, maxItems: 64 }) },
  { additionalProperties: false },
)
export type FirmataProfile = Static<typeof FirmataProfile>
export type ProfileSignal = FirmataProfile['signals'][number]
