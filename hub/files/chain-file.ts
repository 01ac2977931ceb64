// chain.json as the hub's commands write it (`svc chain dev|enrol`, `svc start`): the shape is
// chain/chain-file.ts's, the write is the hub's atomic one (hub/files/README.md: Small files).
import { type ChainInfo, formatChainFile } from '../../chain/chain-file.ts'
import { writeFileAtomic } from '../../files/atomic-file.ts'

/** Mode 0600: a dev chain file holds (well-known) private keys, a real one may too. */
export async function writeChainFile(path: string, info: ChainInfo): Promise<void> {
  await writeFileAtomic(path, formatChainFile(info), { mode: 0o600 })
}
