// The hub's attestation module: store, device key, export, sync, verify. The hub daemon
// composes createAttestSync when a [chain] config section exists.
export {
  openAttestStore,
  attestStorePath,
  type AttestStore,
  type AppendInput,
  type AppendResult,
} from './store.ts'
export { loadOrCreateDeviceKey, signerFromKey, type DeviceSigner } from './device-key.ts'
export {
  exportAttestations,
  DATA_FILE,
  REQUESTS_FILE,
  type ExportRange,
  type ExportResult,
} from './export.ts'
export {
  createAttestSync,
  type AttestSync,
  type SyncChainConfig,
  type SyncOptions,
  type SyncProgress,
  type SyncReport,
} from './sync.ts'
export { verifyLine, type VerifyLineInput, type VerifyLineResult } from './verify-line.ts'
export type { AttestRecord, AttestState, AttestCounts } from './record.ts'
