// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title BatchExecutor: the code an EOA delegates to (EIP-7702) to make many calls in one
/// transaction while staying msg.sender of each. svc's device delegates to it to send many
/// validationRequest calls at once (the registry sees the device, its agent's approved operator)
/// and the attestor to send many validationResponse calls (the registry sees the validator).
/// @notice No storage and no CREATE (Monad forbids CREATE in delegated code): the account's own
/// storage is never touched, so a later delegation elsewhere finds it clean. It keeps what an
/// EOA could do before: receive plain transfers (funding) and prove its key's signatures to
/// contracts that ask ERC-1271 of an account with code (OpenZeppelin's SignatureChecker does,
/// e.g. in setAgentWallet).
contract BatchExecutor {
    /// The call at `index` reverted with `reason`: the whole batch reverts, so the sender can
    /// drop that one call (and report why) and send the others again.
    error CallFailed(uint256 index, bytes reason);
    /// Only the account itself may make it call: anyone else could spend its rights.
    error OnlySelf();

    bytes4 private constant ERC1271_OK = 0x1626ba7e;
    uint256 private constant HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    /// Plain transfers still fund the account (and the empty delegation transaction lands here).
    receive() external payable {}

    /// Calls `target` with each of `calls` in order, as this account; all or nothing.
    function execute(address target, bytes[] calldata calls) external {
        if (msg.sender != address(this)) revert OnlySelf();
        for (uint256 i; i < calls.length; i++) {
            (bool ok, bytes memory ret) = target.call(calls[i]);
            if (!ok) revert CallFailed(i, ret);
        }
    }

    /// ERC-1271: a signature is valid when this account's own key made it (low-s, 65 bytes).
    function isValidSignature(bytes32 hash, bytes calldata sig) external view returns (bytes4) {
        if (sig.length != 65) return 0xffffffff;
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return 0xffffffff;
        address signer = ecrecover(hash, v, r, s);
        return signer != address(0) && signer == address(this) ? ERC1271_OK : bytes4(0xffffffff);
    }
}
