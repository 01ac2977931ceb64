// The console's pages, in navigation order. A page is a `register(app, ctx)` function
// (context.ts says how to write one); listing it here is all it takes to serve it signed-in.
import type { ConsolePage } from './context.ts'
import type { NavItem } from './layout.ts'
import { register as approvals } from './pages/approvals.ts'
import { register as attestations } from './pages/attestations.ts'
import { register as boardFlash } from './pages/board-flash.ts'
import { register as boards } from './pages/boards.ts'
import { register as overview } from './pages/overview.ts'
import { register as runs } from './pages/runs.ts'
import { register as sops } from './pages/sops.ts'

export const NAV: readonly NavItem[] = [
  { key: 'overview', href: '/', label: 'Overview' },
  { key: 'approvals', href: '/approvals', label: 'Approvals' },
  { key: 'runs', href: '/runs', label: 'Runs' },
  { key: 'sops', href: '/sops', label: 'SOPs' },
  { key: 'boards', href: '/boards', label: 'Boards' },
  { key: 'attestations', href: '/attestations', label: 'Attestations' },
]

export const PAGES: readonly ConsolePage[] = [
  overview,
  approvals,
  runs,
  sops,
  boards,
  boardFlash,
  attestations,
]
