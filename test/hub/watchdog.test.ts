// `svc hub` as systemd runs it (hub/svc-hub.service): started through hub/service/notify-socket.pl
// with NOTIFY_SOCKET and WATCHDOG_USEC set, against a notify socket the test binds (python3, as
// Node cannot). It says READY=1 once it serves, pings the watchdog at half the interval, wraps a
// SIGHUP reload in RELOADING=1 … READY=1, says STOPPING=1 on SIGTERM, every message from the
// hub's own PID (NotifyAccess=main). Then the stuck hub: its engine store on a small tmpfs that
// the test fills, so the store refuses writes; the pings stop while the process stays up.
import { STAGE_MS } from '../../hub/engine/store-context.ts'
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startHubChild } from '../helpers/hub-process.ts'
import { commandMissing } from '../helpers/command-missing.ts'
import {
  type NotifyReceiver,
  notifyReceiverMissing,
  startNotifyReceiver,
} from '../helpers/notify-receiver.ts'
import { fillDisk, smallDisk } from '../helpers/small-disk.ts'
import { tempDir } from '../helpers/tmp.ts'
import { waitFor } from '../helpers/wait.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const wrapper = join(root, 'hub/service/notify-socket.pl')

const missing =
  notifyReceiverMissing() ??
  commandMissing(
    'perl',
    ['-MSocket', '-MFcntl', '-e', '1'],
    "perl (Debian's perl-base) for the notify wrapper",
  )

/** Two seconds: a ping every second, so a test sees several without waiting long. */
const WATCHDOG_USEC = '2000000'

async function writeHome(home: string, dataDir?: string): Promise<void> {
  await writeFile(
    join(home, 'hub.toml'),
    `[hub]\nsops_dir = "${join(home, 'sops')}"\n${dataDir ? `data_dir = "${dataDir}"\n` : ''}[broker]\nport = 0\n[webhook]\nenabled = false\n[api]\nport = 0\n[console]\nenabled = false\n`,
  )
}

async function writeSop(home: string): Promise<void> {
  await mkdir(join(home, 'sops', 'answer'), { recursive: true })
  await writeFile(
    join(home, 'sops', 'answer', 'SOP.toml'),
    '[sop]\nname = "answer"\ndescription = "d"\nexecution_mode = "auto"\nagent = "none"\n\n[[triggers]]\ntype = "mqtt"\ntopic = "in/+"\n',
  )
  await writeFile(
    join(home, 'sops', 'answer', 'SOP.md'),
    '# answer\n\n## Steps\n\n1. **Answer**\n   - call: {"tool":"mqtt_publish","args":{"topic":"out/x","payload":"{{trigger}}","qos":1}}\n   - terminal: true\n',
  )
}

/** Index of the first message from `from` on that has `key` (= `value` when given), or -1. */
function indexOf(r: NotifyReceiver, key: string, value?: string, from = 0): number {
  for (let i = from; i < r.messages.length; i++) {
    const v = r.messages[i]!.fields[key]
    if (v !== undefined && (value === undefined || v === value)) return i
  }
  return -1
}

const count = (r: NotifyReceiver, key: string, from = 0): number =>
  r.messages.slice(from).filter((m) => m.fields[key] !== undefined).length

t.test(
  'READY=1 once serving, WATCHDOG=1 pings, RELOADING=1 … READY=1 on SIGHUP, STOPPING=1 on SIGTERM (abstract socket)',
  { skip: missing ?? false },
  async (t) => {
    const home = await tempDir(t)
    await writeHome(home)
    const address = `@svc-test-notify-${process.pid}-${Date.now()}`
    const r = await startNotifyReceiver(t, address)
    const hub = await startHubChild(t, home, {
      launcher: ['perl', wrapper],
      env: { NOTIFY_SOCKET: address, WATCHDOG_USEC },
    })

    const ready = await waitFor(() => indexOf(r, 'READY', '1') + 1, 'READY=1')
    t.equal(r.messages[0]?.fields.STATUS, 'starting', 'the first word is that it is starting')
    t.equal(r.messages[ready - 1]?.fields.STATUS, 'serving: 0 SOPs, 0 boards', 'READY=1 says what it serves')
    await waitFor(() => count(r, 'WATCHDOG', ready) >= 3, 'three watchdog pings after READY=1')
    t.equal(indexOf(r, 'WATCHDOG'), indexOf(r, 'WATCHDOG', undefined, ready), 'no ping before READY=1')

    await writeSop(home)
    process.kill(hub.pid, 'SIGHUP')
    const reloading = await waitFor(() => indexOf(r, 'RELOADING', '1', ready) + 1, 'RELOADING=1')
    t.match(r.messages[reloading - 1]?.fields.MONOTONIC_USEC, /^\d+$/, 'RELOADING=1 carries MONOTONIC_USEC')
    const reloaded = await waitFor(() => indexOf(r, 'READY', '1', reloading) + 1, 'READY=1 after the reload')
    await waitFor(() => indexOf(r, 'STATUS', 'serving: 1 SOP, 0 boards', reloaded - 1) >= 0, 'the new status')
    await waitFor(() => count(r, 'WATCHDOG', reloaded) >= 1, 'pings after the reload')

    await hub.stop()
    t.equal(hub.proc.exitCode, 0, 'a clean stop')
    const stopping = indexOf(r, 'STOPPING', '1')
    t.ok(stopping > reloaded, 'STOPPING=1 after the reload')
    t.equal(count(r, 'WATCHDOG', stopping), 0, 'no ping once stopping')
    t.same(
      [...new Set(r.messages.map((m) => m.pid))],
      [hub.pid],
      'every message comes from the main PID (the wrapper exec()s the hub in its own process)',
    )
  },
)

t.test(
  'without the wrapper, a NOTIFY_SOCKET is named in a warning and nothing is sent',
  { skip: missing ?? false },
  async (t) => {
    const home = await tempDir(t)
    await writeHome(home)
    const sock = join(home, 'notify.sock')
    const r = await startNotifyReceiver(t, sock)
    const hub = await startHubChild(t, home, { env: { NOTIFY_SOCKET: sock, WATCHDOG_USEC } })
    t.match(
      hub.out(),
      /NOTIFY_SOCKET=\S+ is set, but the hub was not started through hub\/service\/notify-socket\.pl/,
    )
    await hub.stop()
    t.equal(hub.proc.exitCode, 0)
    t.same(r.messages, [], 'nothing reached the socket')
  },
)

// A tmpfs of a few MB under the engine's LevelDB (mounting needs root on Linux), filled by the test.
const { path: mnt, error: mountError } = await smallDisk(t, 8, 'svc-watchdog-disk-')

const needsMount =
  missing ?? (mountError ? `needs a small tmpfs (mount as root on Linux): ${mountError}` : false)

/** A hub home whose engine store lives on the test's tmpfs, in a folder of its own. */
async function homeOnTmpfs(tt: Parameters<typeof tempDir>[0], name: string) {
  const home = await tempDir(tt)
  const data = join(home, 'data')
  await mkdir(join(mnt, name))
  await mkdir(data)
  await symlink(join(mnt, name), join(data, 'engine'))
  await writeHome(home, data)
  return home
}

/** Sets or clears the immutable flag on a folder and everything in it (ext4 and the like). */
function immutable(dir: string, on: boolean): void {
  execFileSync('chattr', ['-R', on ? '+i' : '-i', dir], { stdio: 'pipe' })
}

t.test(
  'a hub whose engine store refuses writes on a disk with room stops pinging and stays up; SIGTERM still says STOPPING=1',
  { skip: missing ?? false },
  async (t) => {
    const home = await tempDir(t)
    const data = join(home, 'data')
    await writeHome(home, data)
    const sock = join(home, 'notify.sock')
    const r = await startNotifyReceiver(t, sock)
    const hub = await startHubChild(t, home, {
      launcher: ['perl', wrapper],
      env: { NOTIFY_SOCKET: sock, WATCHDOG_USEC },
    })
    const ready = await waitFor(() => indexOf(r, 'READY', '1') + 1, 'READY=1')
    await waitFor(() => count(r, 'WATCHDOG', ready) >= 2, 'pings while the store takes writes')

    // A store that refuses writes while the disk has room (a card failing, a file made
    // immutable): even root's writes to the open log fail with EPERM. A restart may cure that;
    // refusing work would not. Needs a filesystem with the immutable flag (ext4 and most others).
    const engine = join(data, 'engine')
    try {
      immutable(engine, true)
    } catch (err) {
      t.comment(
        `skipped the rest: chattr +i failed here: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}`,
      )
      await hub.stop()
      return
    }
    t.teardown(() => immutable(engine, false))
    // An idle hub finds out at its next write: LevelDB's staged share, at most STAGE_MS after the
    // last batch (hub/engine/store-context.ts), or the next event's.
    const sick =
      (await waitFor(
        () => r.messages.findIndex((m) => m.fields.STATUS?.startsWith('unhealthy:')) + 1,
        'STATUS=unhealthy',
        { timeoutMs: STAGE_MS + 20_000 },
      )) - 1
    t.match(
      r.messages[sick]?.fields.STATUS,
      /^unhealthy: the engine store refuses writes: /,
      'STATUS says why',
    )
    t.comment(`STATUS=${r.messages[sick]?.fields.STATUS}`)
    t.notOk(r.messages[sick]?.fields.WATCHDOG, 'no ping with the unhealthy status')
    // Three checks later (each logs the withheld ping), still no ping, and the process is up.
    const withheld = (): number => hub.out().split('watchdog ping withheld').length - 1
    const seen = withheld()
    await waitFor(() => withheld() >= seen + 3, 'three more withheld pings')
    t.equal(count(r, 'WATCHDOG', sick), 0, 'no WATCHDOG=1 since the store refused writes')
    t.equal(hub.proc.exitCode, null, 'the hub is still running: systemd, not the hub, ends it')
    t.equal(hub.proc.signalCode, null)

    immutable(engine, false)
    await hub.stop()
    t.ok(indexOf(r, 'STOPPING', '1', sick) > sick, 'STOPPING=1 on SIGTERM')
    t.same([...new Set(r.messages.map((m) => m.pid))], [hub.pid], 'every message from the main PID')
  },
)

t.test(
  'a hub refusing new work for want of disk keeps pinging: a restart would not free the disk',
  { skip: needsMount },
  async (t) => {
    const home = await homeOnTmpfs(t, 'engine-full')
    const sock = join(home, 'notify.sock')
    const r = await startNotifyReceiver(t, sock)
    const hub = await startHubChild(t, home, {
      launcher: ['perl', wrapper],
      env: { NOTIFY_SOCKET: sock, WATCHDOG_USEC },
    })
    await waitFor(() => indexOf(r, 'READY', '1') + 1, 'READY=1')
    const filler = join(mnt, 'filler-full')
    t.teardown(() => rm(filler, { force: true }))
    await fillDisk(filler)
    const refusing =
      (await waitFor(
        () => r.messages.findIndex((m) => m.fields.STATUS?.startsWith('refusing new work')) + 1,
        'STATUS=refusing new work',
      )) - 1
    t.match(r.messages[refusing]?.fields.STATUS, /^refusing new work: the disk is below its reserve/)
    await waitFor(() => count(r, 'WATCHDOG', refusing) >= 2, 'pings go on while it refuses')
    t.equal(
      r.messages.slice(refusing).filter((m) => m.fields.STATUS?.startsWith('unhealthy:')).length,
      0,
      'never unhealthy',
    )
    await rm(filler)
    await hub.stop()
    t.equal(hub.proc.exitCode, 0)
  },
)
