// Manual triggers: `sop_execute`, `svc sop run`, the local API. Any loaded SOP may be started by
// hand (an operator testing a SOP should not have to add a `manual` trigger first); a name that
// is not loaded is refused with that reason.
import { fail } from '../../errors/codes.ts'
import type { Json } from '../../sops/types.ts'
import type { Firer, FireResult } from './fire.ts'
import type { TriggerPlan } from './plan.ts'

export async function fireManual(
  plan: TriggerPlan,
  firer: Firer,
  sop: string,
  payload: string | Json,
  source: string,
  at: number,
): Promise<FireResult> {
  if (!plan.sops.has(sop)) return fail('SOP_NOT_LOADED', `no SOP named "${sop}" is loaded`)
  return firer.fire(sop, { type: 'manual', source, payload, at })
}
