// Sample listings: demo data so an empty market shows something. They are marked `sample`,
// verify answers `preview: true` for them without reading the chain, and they are not for sale.
import { buildManifest, canonicalLine, lineHash } from '../../records/index.ts'
import type { Hex } from 'viem'
import type { BlockStore } from '../files/blockstore.ts'
import { pinFile } from '../files/pin.ts'
import type { MarketDb } from '../store/store.ts'
import type { MachineType } from '../../records/listing-fields.ts'
import type { ListingRecord } from '../store/records.ts'

interface Sample {
  slug: string
  title: string
  summary: string
  machineType: MachineType
  rows: number
  make: (i: number) => Record<string, unknown>
}

const SAMPLES: Sample[] = [
  {
    slug: 'sample-vending-sales',
    title: 'Sample: vending machine sales',
    summary: 'Demo dataset of vend operations from a snack machine (sample data, not attested).',
    machineType: 'vending',
    rows: 40,
    make: (i) => ({
      action: 'vend',
      slot: `A${(i % 6) + 1}`,
      seq: i,
      priceCents: 150 + (i % 4) * 25,
      ok: i % 13 !== 0,
    }),
  },
  {
    slug: 'sample-arm-picks',
    title: 'Sample: robot arm pick and place',
    summary: 'Demo dataset of pick-and-place cycles from a 6-axis arm (sample data, not attested).',
    machineType: 'arm',
    rows: 24,
    make: (i) => ({ action: 'pick_place', cycle: i, gripMm: 40 + (i % 5), durationMs: 1800 + (i % 7) * 30 }),
  },
]

export async function seedSamples(
  db: MarketDb,
  blocks: BlockStore,
  payout: string,
  now: number,
): Promise<string[]> {
  const made: string[] = []
  for (const s of SAMPLES) {
    if (await db.listings.get(s.slug)) continue
    const lines = Array.from({ length: s.rows }, (_, i) => canonicalLine(s.make(i)))
    const requests = lines.map((l, i) => lineHash(`sample:${s.slug}:${i}:${l}`) as Hex)
    const manifest = buildManifest('0', lines, requests)
    const data = Buffer.from(lines.join('\n') + '\n')
    const man = Buffer.from(JSON.stringify(manifest))
    const d = await pinFile(blocks, null, `${s.slug}.jsonl`, data)
    const m = await pinFile(blocks, null, `${s.slug}.manifest.json`, man)
    if (!d.ok || !m.ok) continue
    const rec: ListingRecord = {
      slug: s.slug,
      title: s.title,
      summary: s.summary,
      description: `${s.summary} Each line is one canonical JSON operation record. Use it to see what a listing looks like before buying real data.`,
      machineType: s.machineType,
      license: 'research',
      priceNative: '0.01',
      priceWei: '10000000000000000',
      payout: payout.toLowerCase(),
      agentId: '0',
      keyId: '',
      ownerWallet: '',
      ownerAccount: '',
      dataCid: d.cid,
      manifestCid: m.cid,
      imageCid: null,
      imageType: null,
      rows: s.rows,
      dataBytes: data.length,
      status: 'listed',
      sample: true,
      createdAt: now,
    }
    await db.listings.put(s.slug, rec)
    made.push(s.slug)
  }
  return made
}
