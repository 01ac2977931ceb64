// Content addressing: the CIDs `ipfs add --cid-version=1` gives, and files read back exactly.
import t from 'tap'
import { CID } from 'multiformats/cid'
import * as dagPb from '@ipld/dag-pb'
import { fsBlockStore } from '../../market/files/blockstore.ts'
import { addBytes, readFileBytes } from '../../market/files/unixfs.ts'
import { tempDir } from '../helpers/tmp.ts'

t.test('known CIDs of small files (Kubo, --cid-version=1)', async (t) => {
  const store = fsBlockStore(await tempDir(t))
  t.equal(
    (await addBytes(new Uint8Array(0), store)).toString(),
    'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku',
    'empty file',
  )
  t.equal(
    (await addBytes(new TextEncoder().encode('hello world\n'), store)).toString(),
    'bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4',
    '"hello world\\n"',
  )
})

t.test('a multi-chunk file: dag-pb root over raw 256 KiB leaves, read back byte for byte', async (t) => {
  const store = fsBlockStore(await tempDir(t))
  const bytes = new Uint8Array(3 * 262_144 + 17).map((_, i) => (i * 31 + 7) & 0xff)
  const cid = await addBytes(bytes, store)
  t.equal(cid.version, 1)
  t.equal(cid.code, dagPb.code, 'root is dag-pb')
  const root = dagPb.decode(await store.get(cid))
  t.equal(root.Links.length, 4)
  t.ok(
    root.Links.every((l) => l.Hash.code === 0x55),
    'raw leaves',
  )
  t.same(
    root.Links.map((l) => l.Tsize),
    [262_144, 262_144, 262_144, 17],
  )
  t.equal(
    Buffer.compare(Buffer.from(await readFileBytes(cid, store)), Buffer.from(bytes)),
    0,
    'read back byte for byte',
  )
  t.equal((await addBytes(bytes, store)).toString(), cid.toString(), 'same bytes, same CID')
  t.ok(await store.has(cid))
  t.notOk(await store.has(CID.parse('bafkreifjjcie6lypi6ny7amxnfftagclbuxndqonfipmb64f2km2devei4')))
})
