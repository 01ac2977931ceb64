#!/usr/bin/env node
// The installed `svc` command: runs the TypeScript CLI through tsx (DESIGN: run by tsx).
import { register } from 'tsx/esm/api'
register()
const { main } = await import('../cli/main.ts')
const { endQuietlyOnClosedPipe } = await import('../cli/io.ts')
endQuietlyOnClosedPipe()
process.exitCode = await main(process.argv.slice(2))
