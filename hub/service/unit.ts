// The systemd unit for one install of the hub: what `svc hub install-service` writes, and what
// hub/svc-hub.service is for the paths the Raspberry Pi steps use (a test keeps the two equal).
// Pure: the command finds the paths, the user and the config; this only writes them down.

/** The notify wrapper, relative to the checkout (hub/service/notify-socket.pl says why). */
export const WRAPPER_PATH = 'hub/service/notify-socket.pl'

/** Seconds without a ping after which systemd restarts the hub; it pings every half of this. */
export const WATCHDOG_SEC = 30

export interface UnitInput {
  /** The node binary (absolute). */
  node: string
  /** The perl binary that runs the notify wrapper. */
  perl: string
  /** The checkout (absolute). */
  root: string
  /** dist: the bundle `npm run build` makes (bare node); tsx: bin/svc.js. */
  entry: 'dist' | 'tsx'
  user: string
  /** SVC_HOME: the hub's state (sops/, data/, hub.token). */
  home: string
  config: string
  /** Folders the hub writes outside `home` (a data_dir or sops_dir set elsewhere in hub.toml). */
  writable: string[]
  /** The unit's file name, for the commands in its header. */
  name: string
  /**
   * libjemalloc to preload, checked to start node on this machine (hub/service/jemalloc.ts), or
   * null: glibc's malloc, with a comment saying how to get jemalloc.
   */
  jemalloc: string | null
}

/** The same defaults as the Raspberry Pi steps in hub/README.md. */
export const PI_INSTALL: UnitInput = {
  node: '/usr/bin/node',
  perl: '/usr/bin/perl',
  root: '/opt/svc',
  entry: 'dist',
  user: 'svc',
  home: '/var/lib/svc',
  config: '/etc/svc/hub.toml',
  writable: [],
  name: 'svc-hub.service',
  // Not preloaded in the shipped unit: a libjemalloc built for 4 KiB pages aborts every program
  // on a Pi 5's 16 KiB-page kernel, so only install-service, which tries it, adds it.
  jemalloc: null,
}

/** Environment for glibc's malloc (the unit's comments say why each). */
export const GLIBC_MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' } as const

/**
 * jemalloc's settings (jemalloc(3)), chosen for an idle hub as small as with glibc: one arena and
 * no thread caches (each held memory of its own: 82 MB idle with two arenas and caches, 76 MB
 * with glibc and with these), freed pages given back after a second unused rather than ten, by
 * a background thread, so a quiet hub returns them too (bench/README.md, "endurance: jemalloc").
 */
export const JEMALLOC_CONF =
  'narenas:1,tcache:false,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true'

/** Where Debian's libjemalloc2 puts the library, for node's architecture first. */
export function jemallocCandidates(arch: string): string[] {
  const multiarch: Record<string, string> = {
    x64: 'x86_64-linux-gnu',
    arm64: 'aarch64-linux-gnu',
    arm: 'arm-linux-gnueabihf',
    riscv64: 'riscv64-linux-gnu',
    ppc64: 'powerpc64le-linux-gnu',
    s390x: 's390x-linux-gnu',
  }
  const dirs = [
    multiarch[arch] ? `/usr/lib/${multiarch[arch]}` : null,
    '/usr/lib64',
    '/usr/lib',
    '/usr/local/lib',
  ]
  return dirs.filter((d): d is string => d !== null).map((d) => `${d}/libjemalloc.so.2`)
}

/** The allocator's environment: glibc's settings always (they stand if the preload is ever missing), jemalloc's when given. */
export function mallocEnvironment(jemalloc: string | null): Record<string, string> {
  return jemalloc
    ? { ...GLIBC_MALLOC_ENV, LD_PRELOAD: jemalloc, MALLOC_CONF: JEMALLOC_CONF }
    : { ...GLIBC_MALLOC_ENV }
}

/** Why a path or user cannot go into a unit, or null. */
export function unitInputError(u: UnitInput): string | null {
  // Debian's NAME_REGEX (adduser.conf) with upper case allowed, or a numeric uid.
  if (!/^([a-zA-Z_][a-zA-Z0-9_-]*\$?|\d+)$/.test(u.user) || u.user.length > 32)
    return `--user: "${u.user}" is not a user name systemd accepts`
  for (const [what, p] of [
    ['node', u.node],
    ['perl', u.perl],
    ['the checkout', u.root],
    ['--home', u.home],
    ['--config', u.config],
    ...u.writable.map((w) => ['a folder hub.toml names', w] as const),
  ] as const) {
    if (!p.startsWith('/')) return `${what}: ${p} is not an absolute path`
    if ([...p].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f))
      return `${what}: ${JSON.stringify(p)} has a control character in it`
  }
  return null
}

/** A value taken literally where systemd resolves specifiers (`%n`…): WorkingDirectory=, URLs. */
export const unitPath = (s: string): string => s.replaceAll('%', '%%')

/**
 * One word of a list (Environment=, ReadWritePaths=): specifiers taken literally, and quoted
 * when it has a space, a quote or a backslash (systemd.syntax(7)). `$` means nothing there.
 */
export function unitWord(s: string): string {
  const lit = unitPath(s)
  if (!/[\s"'\\;]/.test(lit)) return lit
  return `"${lit.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/** One word of ExecStart=, where `$NAME` is expanded too (systemd.service(5), Command lines). */
export const execWord = (s: string): string => unitWord(s.replaceAll('$', '$$$$'))

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir}/`)

/** `/var/lib/<name>` → name (StateDirectory=), `/etc/<name>/<file>` → name (ConfigurationDirectory=). */
const oneBelow = (p: string, dir: string): string | null => {
  const rest = p.startsWith(`${dir}/`) ? p.slice(dir.length + 1) : null
  return rest && /^[A-Za-z0-9._-]+$/.test(rest) ? rest : null
}

/** Why the unit preloads jemalloc, or how to have it do so. */
function jemallocComment(path: string | null): string {
  return path
    ? `# - jemalloc instead of glibc's malloc (Debian's libjemalloc2, which install-service started node
#   with first): it gives back what a burst freed, where glibc keeps part of it for good. Settled
#   RSS after 1,000,000 runs in bursts was 1.01-1.03x that after 10,000 with it, 1.45-1.49x with glibc
#   (bench/README.md, "endurance: jemalloc"). glibc's two settings stay for a start without it.
`
    : `# - glibc's malloc: install-service found no libjemalloc2 that node starts with. jemalloc gives
#   back what a burst freed, where glibc keeps part of it for good (bench/README.md, "endurance:
#   jemalloc"): \`sudo apt install libjemalloc2\`, then \`svc hub install-service --force\`.
`
}

export function renderUnit(u: UnitInput): string {
  const w = unitWord
  const entry = u.entry === 'dist' ? `${u.root}/dist/main.js` : `${u.root}/bin/svc.js`
  const exec = [u.perl, `${u.root}/${WRAPPER_PATH}`, u.node, entry, 'hub', '--config', u.config]
    .map(execWord)
    .join(' ')
  const stateDir = oneBelow(u.home, '/var/lib')
  const configDir = oneBelow(u.config.slice(0, u.config.lastIndexOf('/')), '/etc')
  const writable = [...new Set([u.home, ...u.writable])]
  // /home, /root and /run/user are hidden from the service by ProtectHome=true; an install that
  // lives there (nvm's node, a checkout in /home/pi) needs them readable.
  const inHome = [u.node, u.perl, u.root, u.config, ...writable].some(
    (p) => under(p, '/home') || under(p, '/root') || under(p, '/run/user'),
  )
  // PrivateTmp= gives the service its own /tmp and /var/tmp: an install there would vanish.
  const inTmp = [u.root, u.config, ...writable].some((p) => under(p, '/tmp') || under(p, '/var/tmp'))
  const unit = u.name.replace(/\.service$/, '')
  return `# systemd unit for the svc hub (Raspberry Pi OS, Debian, Ubuntu), for the install in ${u.root}.
# Written by \`svc hub install-service\` (hub/README.md, "Watchdog and service"); run it again
# after moving the checkout or node, or after the first \`npm run build\`.
# Enable:   sudo systemctl daemon-reload && sudo systemctl enable --now ${unit}
# Logs:     journalctl -u ${unit} -f        (pino JSON lines)
# State:    systemctl status ${unit}         (Status: what the hub serves, or why it is unhealthy)
# Reload SOPs after editing them:  sudo systemctl reload ${unit}   (SIGHUP)
[Unit]
Description=svc hub (MQTT broker, board bridge, SOP triggers and engine)
Documentation=file://${unitPath(encodeURI(`${u.root}/hub/README.md`))}
Wants=network-online.target
After=network-online.target

[Service]
# READY=1 once the hub serves; notify-socket.pl connects systemd's notify socket and execs node
# in its own process, so the hub's messages come from the main PID.
Type=notify
NotifyAccess=main
# The hub pings every ${WATCHDOG_SEC / 2} s while its event loop turns and its engine store takes a synced
# write; ${WATCHDOG_SEC} s without a ping (a stuck hub) and systemd ends it, and Restart= starts it again.
WatchdogSec=${WATCHDOG_SEC}
User=${u.user}
# The serial ports of the boards (/dev/ttyUSB*, /dev/ttyACM*) belong to the dialout group.
SupplementaryGroups=dialout
WorkingDirectory=${unitPath(u.root)}
Environment=${w(`SVC_HOME=${u.home}`)}
Environment=NODE_ENV=production
# Resident memory on 1-2 GB boards (bench/hub.bench.ts prints each figure):
# - a small young generation: the default semi-space keeps ~30 MB of new space resident;
# - two malloc arenas instead of one per thread (libuv's pool threads doing LevelDB and fs work):
#   a few MB less, at no measurable cost for a hub's load;
# - malloc's mmap threshold fixed at 128 KiB: glibc raises it after each large buffer is freed
#   (an index file written, a history segment read), and then keeps more freed memory in its
#   heap; settled RSS after 1,000,000 runs 206-214 MB with it, 267 MB without, in one fill
#   (bench/README.md, "endurance: the run index in files");
# - one bundled JavaScript program run by bare node, instead of tsx (whose loader thread costs
#   ~31-35 MB) and ~1,000 separate modules (~10 MB of V8 heap).
#   Build it once after each checkout or update:  npm run build   (esbuild → dist/main.js)
#   Without a build, \`svc hub install-service\` writes a unit that runs bin/svc.js (through tsx).
${jemallocComment(u.jemalloc)}Environment=NODE_OPTIONS=--max-semi-space-size=1
${Object.entries(mallocEnvironment(u.jemalloc))
  .map(([k, v]) => `Environment=${w(`${k}=${v}`)}\n`)
  .join('')}ExecStart=${exec}
ExecReload=/bin/kill -HUP $MAINPID
# SIGTERM: the hub closes the bridge, the triggers, flushes the engine, then the broker.
KillSignal=SIGTERM
TimeoutStopSec=30
Restart=on-failure
RestartSec=3
${stateDir ? `StateDirectory=${stateDir}\n` : ''}${configDir ? `ConfigurationDirectory=${configDir}\n` : ''}NoNewPrivileges=true
ProtectSystem=strict
ProtectHome=${inHome ? 'read-only' : 'true'}
PrivateTmp=${inTmp ? 'false' : 'true'}
ReadWritePaths=${writable.map(w).join(' ')}

[Install]
WantedBy=multi-user.target
`
}
