// A config file's text as a TOML document, or the syntax error as `<file>:<line>:<column>: …`.
import { parse, TomlError } from 'smol-toml'

export type TomlDoc = { ok: true; doc: unknown } | { ok: false; error: string }

export function parseTomlDoc(text: string, where: string): TomlDoc {
  try {
    return { ok: true, doc: parse(text) }
  } catch (err) {
    if (err instanceof TomlError)
      return { ok: false, error: `${where}:${err.line}:${err.column}: ${err.message.split('\n')[0]}` }
    return { ok: false, error: `${where}: ${err instanceof Error ? err.message : String(err)}` }
  }
}
