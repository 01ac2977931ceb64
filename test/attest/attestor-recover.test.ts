// The attestor's native signer recovery gives viem's answer, for every recovery id and odd lines.
import t from 'tap'
import { type Hex, recoverMessageAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { recoverLineSigner } from '../../market/attestor/recover.ts'

t.test('same address as viem, both recovery ids, multi-byte UTF-8, empty and long lines', async (t) => {
  const ids = new Set<number>()
  for (let i = 0; i < 24; i++) {
    const acct = privateKeyToAccount(generatePrivateKey())
    const line = [``, `{"n":${i}}`, 'ünïcode ✓ 🚀', 'x'.repeat(5000)][i % 4]!
    const sig = await acct.signMessage({ message: line })
    ids.add(Number.parseInt(sig.slice(-2), 16))
    t.equal(await recoverLineSigner(line, sig), acct.address)
    t.equal(
      await recoverLineSigner(line, sig),
      await recoverMessageAddress({ message: line, signature: sig }),
    )
  }
  t.same([...ids].sort(), [27, 28], 'both recovery ids met')
})

t.test('a malformed signature throws, as viem does', async (t) => {
  await t.rejects(recoverLineSigner('a', `0x${'00'.repeat(65)}` as Hex))
  await t.rejects(recoverLineSigner('a', '0x1234' as Hex))
})
