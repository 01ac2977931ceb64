// Board and signal names, apart from the line codec: hub.toml's checks (hub/daemon/config.ts)
// and the Firmata profile need only this pattern, and importing it from messages.ts would load
// the codec and typebox's builders into every `svc hub`, boards or not (hub/DESIGN.md, "Keeping idle memory down").

/** Board and signal names become one MQTT topic level: no `/`, `+`, `#`, spaces or control bytes. */
export const NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$'
export const NAME_RE = new RegExp(NAME_PATTERN)
