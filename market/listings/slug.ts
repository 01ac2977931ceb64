// Listing slugs: the title in lowercase ASCII words joined by "-", plus 6 random base-36
// characters so two listings with one title never collide. At most 60 characters before the suffix.
import { randomBytes } from 'node:crypto'

export function makeSlug(title: string): string {
  const base = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '')
  const suffix = Array.from(randomBytes(6), (b) => (b % 36).toString(36)).join('')
  return base ? `${base}-${suffix}` : `listing-${suffix}`
}
