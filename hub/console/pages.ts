// The console's pages, in navigation order. A page is a `register(app, ctx)` function
// (context.ts says how to write one); listing it here is all it takes to serve it signed-in.
import type { ConsolePage } from './context.ts'
import type { NavItem } from './layout.ts'
import { register as overview } from './pages/overview.ts'
import { register as sops } from './pages/sops.ts'
import { register as boards } from './pages/boards.ts'

export const NAV: readonly NavItem[] = [
  { key: 'overview', href: '/', label: 'Overview' },
  { key: 'sops', href: '/sops', label: 'SOPs' },
  { key: 'boards', href: '/boards', label: 'Boards' },
]

export const PAGES: readonly ConsolePage[] = [overview, sops, boards]
