// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

interface IValidationRegistry {
    function getValidationStatus(bytes32 requestHash)
        external
        view
        returns (address, uint256, uint8, bytes32, string memory, uint256);
}

/// @title ValidationBatchReader: many ERC-8004 getValidationStatus reads in one eth_call.
/// @notice Never deployed: the market places this runtime code at an unused address through an
/// eth_call state override, so it works on any node that supports overrides (anvil, geth-style
/// RPCs) with nothing on chain. Each row keeps its success flag and the raw return or revert data.
contract ValidationBatchReader {
    function read(IValidationRegistry registry, bytes32[] calldata hashes)
        external
        view
        returns (bool[] memory ok, bytes[] memory results)
    {
        ok = new bool[](hashes.length);
        results = new bytes[](hashes.length);
        for (uint256 i; i < hashes.length; i++) {
            (ok[i], results[i]) = address(registry).staticcall(abi.encodeCall(IValidationRegistry.getValidationStatus, (hashes[i])));
        }
    }
}
