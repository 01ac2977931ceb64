// Channel triggers. For a hub, a channel is a named local inbox: a message posted to it over
// the local API (`POST /channels/<name>`, bearer token) starts every SOP listening on that
// channel name or alias whose condition matches the message text.
import type { FastifyInstance } from 'fastify'
import type { Json } from '../../sops/types.ts'
import type { Firer, FireResult } from './fire.ts'
import { payloadText } from './fire.ts'
import type { TriggerPlan } from './plan.ts'
import { CodedError } from '../../errors/codes.ts'

export const CHANNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export interface ChannelPostResult {
  channel: string
  runs: { sop: string; outcome: string; runId: string | null; error?: string }[]
}

export async function postToChannel(
  plan: TriggerPlan,
  firer: Firer,
  channel: string,
  payload: string | Json,
  at: number,
): Promise<ChannelPostResult> {
  const listeners = plan.channel.get(channel) ?? []
  const text = payloadText(payload)
  const runs: ChannelPostResult['runs'] = []
  const fired = new Set<string>()
  for (const l of listeners) {
    if (fired.has(l.sop) || !firer.matches(l.trigger.condition, text)) continue
    fired.add(l.sop)
    const r: FireResult = await firer.fire(l.sop, {
      type: 'channel',
      source: `channel ${channel}`,
      payload,
      at,
    })
    runs.push(
      r.ok
        ? { sop: l.sop, outcome: r.decision.outcome, runId: r.decision.runId ?? null }
        : { sop: l.sop, outcome: 'error', runId: null, error: r.error },
    )
  }
  return { channel, runs }
}

/**
 * Adds `POST /channels/:name` to the local API (which owns authentication). 404 when no SOP
 * listens on the channel, else 200 with the runs it started (possibly none, when no condition matched).
 */
export function registerChannelRoute(
  app: FastifyInstance,
  getPlan: () => TriggerPlan,
  firer: Firer,
  now: () => number = Date.now,
): void {
  app.post<{ Params: { name: string } }>('/channels/:name', async (req, reply) => {
    const name = req.params.name
    if (!CHANNEL_NAME.test(name))
      throw new CodedError(
        'BAD_INPUT',
        `channel name "${name}" must be 1-64 letters, digits, ".", "_" or "-"`,
      )
    const plan = getPlan()
    if (!plan.channel.has(name)) throw new CodedError('NOT_FOUND', `no SOP listens on channel "${name}"`)
    const body = req.body
    const payload: string | Json =
      body === undefined || body === null ? '' : typeof body === 'string' ? body : (body as Json)
    return reply.send(await postToChannel(plan, firer, name, payload, now()))
  })
}
