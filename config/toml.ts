// A config file's text as a TOML document, or the syntax error as `<file>:<line>:<column>: …`.
import { parse, TomlError } from 'smol-toml'
import { fail, type Result } from '../errors/codes.ts'
import { errorText } from '../errors/text.ts'

export type TomlDoc = Result<{ doc: unknown }>

export function parseTomlDoc(text: string, where: string): TomlDoc {
  try {
    return { ok: true, doc: parse(text) }
  } catch (err) {
    if (err instanceof TomlError)
      return fail('BAD_CONFIG', `${where}:${err.line}:${err.column}: ${err.message.split('\n')[0]}`)
    return fail('BAD_CONFIG', `${where}: ${errorText(err)}`)
  }
}
