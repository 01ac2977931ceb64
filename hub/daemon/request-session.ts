// An MQTT session of its own for requests that are meant for now (board commands, firmware
// flashes): a clean start, so a broker keeps nothing sent while the hub was down to hand over
// minutes late at its return (hub/daemon/board-commands.ts says why), reconnecting as the main
// session does. `name` says which in errors and logs ("board command", "board flash").
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'
import { withNoDelay } from '../broker/no-delay.ts'
import { errorText } from '../../errors/text.ts'
import type { Log } from '../log.ts'

export async function connectRequestSession(
  base: IClientOptions,
  clientId: string,
  name: string,
  log: Log,
): Promise<MqttClient> {
  const client = await mqtt
    .connectAsync({
      ...base,
      clientId,
      clean: true,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
      resubscribe: true,
    })
    .then(withNoDelay)
    .catch((err: unknown) => {
      throw new Error(`${name} session: ${errorText(err)}`)
    })
  client.on('error', (err) => log.warn({ err: err.message }, `${name} session error`))
  return client
}
