// Sample listings: demo data so an empty market shows something. They are marked `sample`,
// verify answers `preview: true` for them without reading the chain, and they are not for sale.
import { buildManifest, canonicalLine, lineHash } from '../../records/index.ts'
import type { Hex } from 'viem'
import type { BlockStore } from '../files/blockstore.ts'
import { pinFile } from '../files/pin.ts'
import type { MarketDb } from '../store/store.ts'
import type { MachineType } from '../../records/listing-fields.ts'
import type { ListingRecord } from '../store/records.ts'
import { buildPreview } from './preview.ts'

interface Sample {
  slug: string
  title: string
  summary: string
  machineType: MachineType
  rows: number
  make: (i: number) => Record<string, unknown>
}

// Fixed times, so a sample's lines (and their hashes) are the same on every start.
const T0 = Date.UTC(2026, 0, 5, 8)
const at = (i: number, minutes: number): string => new Date(T0 + i * minutes * 60_000).toISOString()

/** Sample lines published on each sample listing's page. */
const SAMPLE_LINES = 3

const SAMPLES: Sample[] = [
  {
    slug: 'sample-vending-sales',
    title: 'Sample: vending machine sales',
    summary: 'Demo dataset of vend operations from a snack machine (sample data, not attested).',
    machineType: 'vending',
    rows: 40,
    make: (i) => ({
      action: i % 13 === 0 ? 'vend.jam' : 'vend',
      at: at(i, 37),
      params: { slot: `A${(i % 6) + 1}`, priceCents: 150 + (i % 4) * 25, ok: i % 13 !== 0 },
      seq: i,
    }),
  },
  {
    slug: 'sample-arm-picks',
    title: 'Sample: robot arm pick and place',
    summary: 'Demo dataset of pick-and-place cycles from a 6-axis arm (sample data, not attested).',
    machineType: 'arm',
    rows: 24,
    make: (i) => ({
      action: i % 8 === 7 ? 'home' : 'pick_place',
      at: at(i, 2),
      params: { cycle: i, gripMm: 40 + (i % 5), durationMs: 1800 + (i % 7) * 30 },
    }),
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
    // A sample seeded before previews existed is made again: it is demo data nobody bought.
    if ((await db.listings.get(s.slug))?.preview) continue
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
      description: `${s.summary}\n\nEach line is one canonical JSON operation record (\`action\`, \`at\`, \`params\`), as the hub's \`chain_attest\` step writes it. Use it to see what a listing looks like **before** buying real data:\n\n- the *Preview* shows the fields and a few lines;\n- *Verify* shows the manifest rows (no chain is read for a sample).`,
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
      preview: buildPreview(lines, manifest.rows, SAMPLE_LINES),
    }
    await db.listings.put(s.slug, rec)
    made.push(s.slug)
  }
  return made
}
