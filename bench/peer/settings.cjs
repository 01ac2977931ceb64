// Node-RED for the peer bench: headless (no editor, no HTTP nodes), warnings only, the flow file
// and port given on the command line by bench/peer.bench.ts.
module.exports = {
  httpAdminRoot: false,
  httpNodeRoot: false,
  disableEditor: true,
  credentialSecret: false,
  logging: { console: { level: 'warn', metrics: false, audit: false } },
  contextStorage: { default: { module: 'memory' } },
}
