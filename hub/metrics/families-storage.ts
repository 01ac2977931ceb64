// What is kept on disk and how fast it fills: attested lines by state and the age of the oldest
// one not synced, each store's bytes, the data filesystem's free space, and what the process
// has written (an SD card's wear). A source that answered at the first scrape and not at this
// one reads NaN, not a false 0 that would look like a full disk.
import { ATTEST_STATES } from '../attest/record.ts'
import { ageSeconds, type Family, type MetricParts, single } from './family.ts'

const SYNC_STATES = ['idle', 'syncing', 'waiting', 'stuck', 'retrying'] as const

export function storageFamilies(parts: MetricParts): Family[] {
  const out: Family[] = []
  if (parts.attest)
    out.push(
      {
        type: 'gauge',
        name: 'svc_attest_lines',
        help: 'Attested lines in the store, by state (pending, sending, requested, attested, failed)',
        labels: ['state'],
        fill: (s, put) => {
          for (const state of ATTEST_STATES) put({ state }, s.attest?.counts[state] ?? 0)
        },
      },
      single(
        'gauge',
        'svc_attest_oldest_unsynced_age_seconds',
        'Age of the oldest line neither attested nor failed (0 when every line is synced)',
        (s) => (s.attest?.oldestUnsyncedAt != null ? ageSeconds(s, s.attest.oldestUnsyncedAt) : 0),
      ),
    )
  if (parts.attestSync)
    out.push({
      type: 'gauge',
      name: 'svc_attest_sync_state',
      help: "The attestation sync's state: 1 for the current one",
      labels: ['state'],
      fill: (s, put) => {
        const now = s.attest?.sync?.state
        for (const state of SYNC_STATES) put({ state }, now === state ? 1 : 0)
      },
    })
  out.push({
    type: 'gauge',
    name: 'svc_store_size_bytes',
    help: 'Bytes on disk of each store (folder) under the data folder',
    labels: ['store'],
    fill: (s, put) => {
      for (const x of s.stores) put({ store: x.store }, x.bytes)
    },
  })
  if (parts.filesystem)
    out.push(
      single(
        'gauge',
        'svc_data_filesystem_avail_bytes',
        "Bytes the hub may still write on the data folder's filesystem",
        (s) => s.filesystem?.availBytes ?? Number.NaN,
      ),
      single(
        'gauge',
        'svc_data_filesystem_size_bytes',
        "Size of the data folder's filesystem",
        (s) => s.filesystem?.sizeBytes ?? Number.NaN,
      ),
    )
  if (parts.io)
    out.push(
      single(
        'counter',
        'svc_process_disk_written_bytes_total',
        'Bytes the hub process caused to be written to storage (/proc/self/io write_bytes)',
        (s) => s.io?.writeBytes ?? Number.NaN,
      ),
      single(
        'counter',
        'svc_process_disk_read_bytes_total',
        'Bytes the hub process caused to be read from storage (/proc/self/io read_bytes)',
        (s) => s.io?.readBytes ?? Number.NaN,
      ),
    )
  return out
}
