// The flasher as `svc hub` runs it (hub/daemon/hub.ts): the bridge's port handover, avrdude through
// each board's bootloader (bridge/flash/avrdude.ts), the profiles of hub.toml, the history and the
// images under `<data_dir>/firmware/`. Loaded only when boards are configured.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { avrdudeMissing, runAvrdude, runResetCommand } from '../../bridge/flash/avrdude.ts'
import { type ImageIdentity, imageIdentity } from '../../bridge/flash/identity.ts'
import { parseIntelHex, toIntelHex } from '../../bridge/flash/intel-hex.ts'
import type { FlashProfile } from '../../bridge/flash/profile.ts'
import { fail } from '../../errors/codes.ts'
import type { HubConfig } from '../daemon/config.ts'
import type { Log } from '../log.ts'
import { type FlashBridge, type FlashEvent, type Flasher, createFlasher } from './flasher.ts'
import { createFlashHistory } from './history.ts'
import { createImageStore, type ImageStore } from './images.ts'

/** Where the flash history and the images live. */
export function firmwareDir(dataDir: string): string {
  return join(dataDir, 'firmware')
}

export function historyFile(dataDir: string): string {
  return join(firmwareDir(dataDir), 'history.jsonl')
}

/**
 * The image read back from a board, cut to what a flash may change: below the bootloader
 * (`maxImageBytes`: the read-back holds the bootloader too, and writing a bootloader's own pages
 * through it would overwrite the code doing the writing), without the erased (0xFF) tail.
 */
export function applicationPart(bytes: Uint8Array, maxImageBytes: number | undefined): Uint8Array {
  let end = Math.min(bytes.length, maxImageBytes ?? bytes.length)
  while (end > 0 && bytes[end - 1] === 0xff) end--
  return bytes.subarray(0, end)
}

async function keepPrevious(
  images: ImageStore,
  path: string,
  profile: FlashProfile,
): Promise<ImageIdentity | undefined> {
  const read = parseIntelHex(await readFile(path, 'utf8'), { where: path })
  if (!read.ok) throw new Error(read.error)
  const app = applicationPart(read.value.bytes, profile.maxImageBytes)
  // An empty application (a board with only its bootloader) is kept as one erased byte: a valid
  // image that writes nothing of consequence.
  await images.write(path, toIntelHex(app.length > 0 ? app : Uint8Array.of(0xff)))
  return imageIdentity(app)
}

export function createHubFlasher(o: {
  config: HubConfig
  bridge: FlashBridge
  log: Log
  onEvent?(e: FlashEvent): void
}): Flasher {
  const { config, log } = o
  const profiles = new Map(config.boards.flatMap((b) => (b.flash ? [[b.name, b.flash] as const] : [])))
  const images = createImageStore({ dir: firmwareDir(config.dataDir), keep: config.flash.keepImages })
  // Said at start, not first at a flash: the hub runs without avrdude, its boards just cannot be flashed.
  const missing = profiles.size > 0 ? avrdudeMissing(config.flash.avrdude) : undefined
  if (missing)
    log.warn(
      { boards: [...profiles.keys()] },
      `board flash: ${missing}; boards cannot be flashed until it is`,
    )
  return createFlasher<FlashProfile>({
    boards: config.boards.map((b) => b.name),
    profile: (board) => profiles.get(board) ?? null,
    bridge: o.bridge,
    async program(r) {
      const done = await runAvrdude({
        avrdude: config.flash.avrdude,
        port: r.port,
        profile: r.profile,
        ops: [{ op: r.op, path: r.path }],
        onProgress: (p) => r.onProgress(p),
      })
      if (done.ok) {
        log.info(
          { board: r.board, op: r.op, ms: done.ms, bytes: done.bytes, tries: done.tries },
          'avrdude done',
        )
        return { ok: true }
      }
      log.warn({ board: r.board, op: r.op, phase: done.phase, output: done.output }, 'avrdude failed')
      return { ok: false, code: done.code, error: done.error, phase: done.phase }
    },
    // A board reset by a command is not reset by its port opening (DTR does that on an Uno): the
    // new firmware already runs, and its hello went out to a closed port. One more reset makes it
    // say hello to the bridge.
    async restart(board, profile) {
      if (profile.reset.kind !== 'command') return
      const r = await runResetCommand(profile.reset.argv)
      if (!r.ok) log.warn({ board, error: r.error }, 'reset after the flash failed; asking the board instead')
    },
    parseImage(text, board) {
      const max = profiles.get(board)?.maxImageBytes
      const parsed = parseIntelHex(text, {
        where: 'Intel HEX',
        ...(max !== undefined ? { maxSize: max } : {}),
      })
      if (!parsed.ok)
        return fail(
          parsed.code,
          max !== undefined && parsed.code === 'TOO_LARGE'
            ? `${parsed.error}: ${board} takes at most ${max} bytes below its bootloader`
            : parsed.error,
        )
      return { ok: true, value: { bytes: parsed.value.bytes } }
    },
    identity: imageIdentity,
    keepPrevious: (_board, path, profile) => keepPrevious(images, path, profile),
    history: createFlashHistory({ file: historyFile(config.dataDir) }),
    images,
    helloTimeoutMs: config.flash.helloTimeoutMs,
    now: Date.now,
    log,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
  })
}
