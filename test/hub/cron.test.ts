// Cron: the missed-run rule (one catch-up per schedule missed while the hub was off).
import t from 'tap'
import { join } from 'node:path'
import { readFile, writeFile } from 'node:fs/promises'
import { silentLog } from '../../hub/log.ts'
import { createCronSource, cronKey, missedSince } from '../../hub/triggers/cron.ts'
import { createFirer } from '../../hub/triggers/fire.ts'
import { buildPlan } from '../../hub/triggers/plan.ts'
import { matches } from '../../sops/conditions.ts'
import { tempDir } from '../helpers/tmp.ts'
import { recordingEngine, sop } from './fake-engine.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 0, 1, 10, 30) // 10:30 UTC

t.test('missedSince: the latest due time after the last fire, in the timezone', async (t) => {
  t.equal(missedSince('0 * * * *', 'UTC', T0 - HOUR, T0), Date.UTC(2026, 0, 1, 10, 0))
  t.equal(
    missedSince('0 * * * *', 'UTC', Date.UTC(2026, 0, 1, 10, 0), T0),
    null,
    'fired at the due time: nothing missed',
  )
  // 09:00 in Berlin (UTC+1 in January) is 08:00 UTC.
  t.equal(missedSince('0 9 * * *', 'Europe/Berlin', T0 - 24 * HOUR, T0), Date.UTC(2026, 0, 1, 8, 0))
})

t.test('first start: no catch-up; a restart after missed times: exactly one, marked catch-up', async (t) => {
  const dir = await tempDir(t)
  const statePath = join(dir, 'cron.json')
  const plan = buildPlan([sop('hourly', [{ type: 'cron', expression: '0 * * * *' }])])
  const engine = recordingEngine()
  const firer = createFirer(engine, matches, silentLog)

  let now = T0
  const first = await createCronSource(firer, silentLog, {
    timezone: 'UTC',
    catchUp: true,
    statePath,
    now: () => now,
  })
  await first.setPlan(plan)
  await first.stop()
  t.equal(engine.calls.length, 0, 'a schedule seen for the first time is not caught up')
  const saved = JSON.parse(await readFile(statePath, 'utf8')) as Record<string, number>
  t.equal(saved[cronKey('hourly', '0 * * * *')], T0)

  now = T0 + 5 * HOUR // off from 10:30 to 15:30: five due times missed
  const second = await createCronSource(firer, silentLog, {
    timezone: 'UTC',
    catchUp: true,
    statePath,
    now: () => now,
  })
  await second.setPlan(plan)
  await second.stop()
  t.equal(engine.calls.length, 1, 'one catch-up run however many were missed')
  t.match(engine.calls[0]?.event, {
    type: 'cron',
    source: 'cron 0 * * * * (catch-up)',
    payload: { catchUp: true, scheduled: '2026-01-01T15:00:00.000Z' },
  })

  const third = await createCronSource(firer, silentLog, {
    timezone: 'UTC',
    catchUp: true,
    statePath,
    now: () => now,
  })
  await third.setPlan(plan)
  await third.stop()
  t.equal(engine.calls.length, 1, 'the catch-up is remembered: a quick restart does not repeat it')
})

t.test('catch_up = false never catches up; a broken state file is survived', async (t) => {
  const dir = await tempDir(t)
  const statePath = join(dir, 'cron.json')
  await writeFile(statePath, JSON.stringify({ [cronKey('d', '0 * * * *')]: T0 - 10 * HOUR }))
  const engine = recordingEngine()
  const firer = createFirer(engine, matches, silentLog)
  const plan = buildPlan([sop('d', [{ type: 'cron', expression: '0 * * * *' }])])
  const off = await createCronSource(firer, silentLog, {
    timezone: 'UTC',
    catchUp: false,
    statePath,
    now: () => T0,
  })
  await off.setPlan(plan)
  await off.stop()
  t.equal(engine.calls.length, 0)

  await writeFile(statePath, '{not json')
  const broken = await createCronSource(firer, silentLog, {
    timezone: 'UTC',
    catchUp: true,
    statePath,
    now: () => T0,
  })
  await broken.setPlan(plan)
  await broken.fireNow('d', '0 * * * *')
  await broken.stop()
  t.equal(engine.calls.length, 1)
  t.match(engine.calls[0]?.event, { type: 'cron', payload: { catchUp: false } })
})

t.test('schedules run in the configured timezone', async (t) => {
  const engine = recordingEngine()
  const src = await createCronSource(createFirer(engine, matches, silentLog), silentLog, {
    timezone: 'Asia/Tokyo',
    catchUp: false,
  })
  t.teardown(() => src.stop())
  await src.setPlan(buildPlan([sop('tokyo', [{ type: 'cron', expression: '30 9 * * *' }])]))
  const [n] = src.next()
  t.equal(n?.sop, 'tokyo')
  // 09:30 in Tokyo (UTC+9, no daylight saving) is always 00:30 UTC.
  t.match(n?.next, /T00:30:00\.000Z$/)
})
