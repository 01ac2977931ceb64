// The chain every part of svc speaks: Monad testnet's id, which the local anvil also takes so
// that one code path serves both (market/API.md, "Versioning": manifests and signed messages carry it).
export const CHAIN_ID = 10143
