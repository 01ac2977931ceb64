// The records module: everything the hub and the market share about attested lines. Pure.
export { canonicalLine, tryCanonicalLine, type CanonicalResult } from './canonical.ts'
export { lineHash, bytesHash, isHash } from './hash.ts'
export { splitLines, checkRecordFiles } from './data-lines.ts'
export {
  type Manifest,
  type ManifestRow,
  MAX_MANIFEST_ROWS,
  buildManifest,
  checkManifest,
  checkManifestAgainstData,
} from './manifest.ts'
export { requestHashFor, type RequestHashInput } from './request-hash.ts'
export {
  ATTEST_RESPONSE,
  ATTEST_TAG,
  type RowCheck,
  type RowCondition,
  type RowExpectation,
  type ValidationRow,
  checkValidationRow,
} from './verify-row.ts'
