// The ToolRegistry the hub hands to the engine. Built from injected ports, so tests wire real
// services. Seam for parts that land later: `extra` takes ready tools (chain_attest from the
// attestation factory, sop_* tools), and a later tool never silently replaces an earlier one.
import { fail, type Result } from '../errors/codes.ts'
import { createBoardSend, type BoardPort } from './board_send.ts'
import { createHttpRequest } from './http_request.ts'
import { createMqttPublish, type PublishPort } from './mqtt_publish.ts'
import type { Tool, ToolRegistry } from './types.ts'
import { createWait } from './wait.ts'

export interface RegistryPorts {
  /** The bridge; without it `board_send` is not registered. */
  boards?: BoardPort
  publish: PublishPort
  /** Register `http_request` (hubs that are online); default true. */
  http?: boolean
  httpTimeoutMs?: number
  boardTimeoutMs?: number
  /** More tools (chain_attest, sop_execute…). */
  extra?: readonly Tool[]
}

export type RegistryResult = Result<{ tools: ToolRegistry }>

export function buildToolRegistry(ports: RegistryPorts): RegistryResult {
  const list: Tool[] = [createMqttPublish(ports.publish), createWait()]
  if (ports.boards) list.push(createBoardSend(ports.boards, { timeoutMs: ports.boardTimeoutMs ?? 5_000 }))
  if (ports.http ?? true) list.push(createHttpRequest({ timeoutMs: ports.httpTimeoutMs ?? 10_000 }))
  list.push(...(ports.extra ?? []))
  const tools = new Map<string, Tool>()
  for (const tool of list) {
    if (tools.has(tool.name)) return fail('INTERNAL', `tool "${tool.name}" is registered twice`)
    tools.set(tool.name, tool)
  }
  return { ok: true, tools }
}
