// What every start step of the hub (hub.ts `startHub`) is given: the config, the log, the parts
// this build composes, and the closers, to which a step adds each part it started. Close runs
// the closers the other way round, each part closed even when an earlier one fails to.
import type { Logger } from 'pino'
import type { Log } from '../../log.ts'
import type { HubConfig } from '../config.ts'
import type { HubParts } from '../parts.ts'
import { errorText } from '../../../errors/text.ts'

export type HubLog = Logger | Log

export class Closers {
  private readonly list: { name: string; fn: () => Promise<unknown> }[] = []

  constructor(private readonly log: HubLog) {}

  add(name: string, fn: () => Promise<unknown>): void {
    this.list.push({ name, fn })
  }

  async closeAll(): Promise<void> {
    for (const c of this.list.splice(0).reverse()) {
      try {
        await c.fn()
      } catch (err) {
        this.log.error({ part: c.name, err: errorText(err) }, 'part did not close cleanly')
      }
    }
  }
}

export interface StartContext {
  config: HubConfig
  log: HubLog
  parts: HubParts
  closers: Closers
}
