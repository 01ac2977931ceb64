// libsecp256k1 (Bitcoin Core's C library) through the `secp256k1` package's N-API binding: about
// 8x the pure-JS signer, which is what bounded attested lines per second. The package ships
// prebuilt binaries for linux-x64 (glibc and musl), darwin-arm64 and win32-x64; elsewhere (a
// Raspberry Pi, linux-arm64) node-gyp builds it when npm runs install scripts, and when there is
// no binary at all the device key signs with the pure-JS path instead (device-key.ts): same
// signatures, slower. Only the binding is loaded, never the package's pure-JS fallback.
import { createRequire } from 'node:module'

export interface NativeSecp256k1 {
  /** RFC 6979 deterministic, low-s ECDSA over a 32-byte digest. */
  ecdsaSign(msg32: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recid: number }
}

let loaded: { ok: true; lib: NativeSecp256k1 } | { ok: false; error: string } | undefined

export function loadNativeSecp256k1(): { ok: true; lib: NativeSecp256k1 } | { ok: false; error: string } {
  if (loaded) return loaded
  try {
    const lib = createRequire(import.meta.url)('secp256k1/bindings') as NativeSecp256k1
    loaded = { ok: true, lib }
  } catch (err) {
    loaded = { ok: false, error: err instanceof Error ? err.message.split('\n')[0]! : String(err) }
  }
  return loaded
}
