// libsecp256k1 (Bitcoin Core's C library) through the `secp256k1` package's N-API binding: about
// 8x the pure-JS signer, which is what bounded attested lines per second. The package ships
// prebuilt binaries for linux-x64 (glibc and musl), darwin-arm64 and win32-x64; elsewhere (a
// Raspberry Pi, linux-arm64) node-gyp builds it when npm runs install scripts, and when there is
// no binary at all the device key signs with the pure-JS path instead (device-key.ts): same
// signatures, slower. Only the binding is loaded, never the package's pure-JS fallback.
import { createRequire } from 'node:module'
import { type Failure, fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'

export interface NativeSecp256k1 {
  /** RFC 6979 deterministic, low-s ECDSA over a 32-byte digest. */
  ecdsaSign(msg32: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number }
}

/** `UNAVAILABLE`: no binding for this platform (the pure-JS signer is used instead). */
export type NativeLoad = { ok: true; lib: NativeSecp256k1 } | Failure<'UNAVAILABLE'>

let loaded: NativeLoad | undefined

export function loadNativeSecp256k1(): NativeLoad {
  if (loaded) return loaded
  try {
    const lib = createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1
    loaded = { ok: true, lib }
  } catch (err) {
    loaded = fail('UNAVAILABLE', errorText(err).split('\n')[0]!)
  }
  return loaded
}
