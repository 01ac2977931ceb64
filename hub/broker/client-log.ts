// The hub's own MQTT sessions (mqtt.js) log nothing unless DEBUG asks for it. mqtt.js calls its
// `debug` logger several times per packet, and `debug` gathers its arguments into an array before
// it checks whether it is enabled: a tenth of everything the hub allocated under a burst of
// events (bench/README.md, peer). With DEBUG set (e.g. DEBUG=mqttjs*), mqtt.js keeps its own.
export const quietClientLog: { log?: () => void } = process.env.DEBUG ? {} : { log: () => {} }
