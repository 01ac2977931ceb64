// Where the hub and the CLI keep their state. One place, so the daemon and the commands that
// talk to it always agree. SVC_HOME overrides the per-user default (tests point it at a temp dir).
import { homedir } from 'node:os'
import { join } from 'node:path'

export interface SvcPaths {
  home: string
  /** Default `<sops_dir>` (SOP directories and plugin packages): SVC_SOPS_DIR, else `<home>/sops`. */
  sops: string
  /** The hub's LevelDB folders live under here. */
  data: string
  /** Local API bearer token, mode 0600, written by the hub at start. */
  apiToken: string
  /** `{ "url": "http://127.0.0.1:<port>" }` of the running hub's local API. */
  apiInfo: string
  /** The device's secp256k1 key, mode 0600, created on first start. */
  deviceKey: string
  /** The market bearer key (`svc key set`), mode 0600. */
  marketKey: string
}

export function svcPaths(env: NodeJS.ProcessEnv = process.env): SvcPaths {
  const home = env.SVC_HOME && env.SVC_HOME.length > 0 ? env.SVC_HOME : join(homedir(), '.svc')
  return {
    home,
    sops: env.SVC_SOPS_DIR && env.SVC_SOPS_DIR.length > 0 ? env.SVC_SOPS_DIR : join(home, 'sops'),
    data: join(home, 'data'),
    apiToken: join(home, 'hub.token'),
    apiInfo: join(home, 'hub-api.json'),
    deviceKey: join(home, 'device.key'),
    marketKey: join(home, 'market.key'),
  }
}
