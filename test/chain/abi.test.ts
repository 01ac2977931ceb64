// The committed ABI (chain/abi.generated.ts) must be exactly what solc makes of the contracts, and the
// reads the market uses must have the ERC-8004 v2.0.0 shapes (market/API.md, "Chain reads").
import t from 'tap'
import { type AbiFunction, toFunctionSignature } from 'viem'
import { identityRegistryAbi, validationRegistryAbi } from '../../chain/abi.generated.ts'
import { compileContracts } from '../../chain/compile.ts'

t.test('committed ABI matches the compiled contracts', async (t) => {
  const a = await compileContracts()
  t.same(identityRegistryAbi, a.IdentityRegistry.abi, 'IdentityRegistry: run `npx tsx chain/gen-abi.ts`')
  t.same(
    validationRegistryAbi,
    a.ValidationRegistry.abi,
    'ValidationRegistry: run `npx tsx chain/gen-abi.ts`',
  )
  t.match(a.IdentityRegistry.bytecode, /^0x[0-9a-f]{100,}$/)
})

function fn(abi: readonly { type: string; name?: string }[], name: string) {
  return abi.filter((x) => x.type === 'function' && x.name === name)
}

t.test('ERC-8004 signatures', async (t) => {
  const sigs = (abi: readonly { type: string }[]) =>
    abi.filter((x) => x.type === 'function').map((x) => toFunctionSignature(x as AbiFunction))
  const v = sigs(validationRegistryAbi)
  for (const s of [
    'validationRequest(address,uint256,string,bytes32)',
    'validationResponse(bytes32,uint8,string,bytes32,string)',
    'getValidationStatus(bytes32)',
    'getSummary(uint256,address[],string)',
    'getAgentValidations(uint256)',
    'getValidatorRequests(address)',
  ])
    t.ok(v.includes(s), s)
  const status = fn(validationRegistryAbi, 'getValidationStatus')[0] as unknown as AbiFunction
  t.same(
    status.outputs.map((o) => o.type),
    ['address', 'uint256', 'uint8', 'bytes32', 'string', 'uint256'],
  )
  const id = sigs(identityRegistryAbi)
  for (const s of [
    'register()',
    'register(string)',
    'register(string,(string,bytes)[])',
    'ownerOf(uint256)',
    'getAgentWallet(uint256)',
    'setAgentWallet(uint256,address,uint256,bytes)',
    'setApprovalForAll(address,bool)',
    'transferFrom(address,address,uint256)',
    'safeTransferFrom(address,address,uint256,bytes)',
    'getMetadata(uint256,string)',
    'setMetadata(uint256,string,bytes)',
    'setAgentURI(uint256,string)',
  ])
    t.ok(id.includes(s), s)
  const owner = fn(identityRegistryAbi, 'ownerOf')[0] as unknown as AbiFunction
  t.same(
    owner.outputs.map((o) => o.type),
    ['address'],
  )
})
