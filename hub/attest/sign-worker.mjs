// Worker for signer-pool.ts: signs lines (EIP-191 over the UTF-8 bytes) with the device key.
// Plain JS so it starts without a TypeScript loader.
import { parentPort, workerData } from 'node:worker_threads'
import { privateKeyToAccount } from 'viem/accounts'

const account = privateKeyToAccount(workerData.privateKey)
parentPort.on('message', async ({ id, lines }) => {
  try {
    const sigs = []
    for (const message of lines) sigs.push(await account.signMessage({ message }))
    parentPort.postMessage({ id, sigs })
  } catch (err) {
    parentPort.postMessage({ id, error: String(err) })
  }
})
