// The golden line files under boards/golden/, shared by the firmware host test and the bridge tests.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const GOLDEN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'boards', 'golden')
export const golden = (name: string): Buffer => readFileSync(join(GOLDEN, name))
export const goldenJson = <T>(name: string): T => JSON.parse(golden(name).toString('utf8')) as T
/** Lines of a golden file, without their newlines (the file ends with one). */
export const goldenLines = (name: string): string[] => golden(name).toString('utf8').split('\n').slice(0, -1)
