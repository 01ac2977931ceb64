// The file system the endurance bench says its figures were taken on (bench/file-system.ts): the
// deepest mount above the folder, from mountinfo lines as proc(5) writes them.
import t from 'tap'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describeMount, mountOf } from '../../bench/file-system.ts'
import { tempDir } from '../helpers/tmp.ts'

t.test('the deepest mount above a folder, escapes read', async (t) => {
  const dir = await tempDir(t)
  const deep = join(dir, 'card', 'data')
  await mkdir(deep, { recursive: true })
  const esc = (p: string) => p.replaceAll(' ', '\\040')
  const info = [
    '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard',
    `40 22 7:4 / ${esc(dir)} rw,noatime shared:9 - tmpfs tmpfs rw,size=8192k`,
    `41 40 179:2 / ${esc(join(dir, 'card'))} rw,relatime shared:10 - ext4 /dev/mmcblk0p2 rw,data=ordered`,
    `42 22 7:5 / ${esc(`${dir}-other`)} rw shared:11 - xfs /dev/loop5 rw`,
  ].join('\n')
  t.same(mountOf(deep, info), {
    at: join(dir, 'card'),
    type: 'ext4',
    source: '/dev/mmcblk0p2',
    options: 'rw,relatime,rw,data=ordered',
  })
  t.equal(mountOf(dir, info)?.type, 'tmpfs', 'the folder a mount is at is on it')
  t.equal(mountOf('/', info)?.source, '/dev/vda')
  t.equal(
    describeMount(mountOf(deep, info)),
    `ext4 on /dev/mmcblk0p2, mounted at ${join(dir, 'card')} (rw,relatime,rw,data=ordered)`,
  )
  t.equal(describeMount(null), 'an unknown file system')
})

t.test('a name with a space, as mountinfo escapes it', async (t) => {
  const dir = await tempDir(t)
  const spaced = join(dir, 'my card')
  await mkdir(spaced)
  const info = `22 1 254:0 / / rw - ext4 /dev/vda rw\n50 22 7:1 / ${spaced.replaceAll(' ', '\\040')} rw - vfat /dev/sda1 rw`
  t.equal(mountOf(spaced, info)?.type, 'vfat')
  t.equal(mountOf(spaced, info)?.at, spaced)
})

t.test('this machine: the temp folder is on some mount', async (t) => {
  const dir = await tempDir(t)
  const m = mountOf(dir)
  t.ok(m && m.type.length > 0 && dir.startsWith(m.at === '/' ? '/' : m.at), describeMount(m))
})
