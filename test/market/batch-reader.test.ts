// The committed ValidationBatchReader artifact is what solc makes of the committed source.
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { ARTIFACT, renderBatchReaderArtifact } from '../../market/chain/gen-batch-reader.ts'

t.test('batch-reader.generated.ts matches a fresh compile of ValidationBatchReader.sol', async (t) => {
  t.equal(
    await readFile(ARTIFACT, 'utf8'),
    await renderBatchReaderArtifact(),
    'run `npx tsx market/chain/gen-batch-reader.ts` after changing the contract',
  )
})
