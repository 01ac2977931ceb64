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
/// RPCs) with nothing on chain.
/// @dev `read` answers one packed record per hash, in order, decoded by hand in
/// market/chain/batch-reader-codec.ts (which documents the layout again):
///   0x01 validator(20) agentId(32) response(1) responseHash(32) lastUpdate(32) tagLength(2) tag
///        the read succeeded;
///   0x00 length(2) revertData          the read reverted (data longer than 0xffff is dropped);
///   0x02                               the registry answered data not shaped like its ABI says.
/// Why packed rather than (bool[], bytes[]): decoding 5,000 ABI-padded rows with a generic
/// decoder cost more than all the EVM work; the packed form is a third of the bytes and reading
/// it is a few offsets. Why assembly: scratch memory is reused for every call, so memory (and its
/// quadratic gas) grows only with the answer, and the answer is returned in place, not copied.
contract ValidationBatchReader {
    function read(IValidationRegistry registry, bytes32[] calldata hashes) external view returns (bytes memory) {
        bytes4 selector = IValidationRegistry.getValidationStatus.selector;
        assembly ("memory-safe") {
            // The answer is built as ABI `bytes` at the free memory pointer: offset, length, data.
            let out := mload(0x40)
            mstore(out, 0x20)
            let p := add(out, 0x40)
            // Call data sits in scratch space 0x00-0x23; the selector stays put across calls.
            mstore(0x00, selector)
            let end := add(hashes.offset, shl(5, hashes.length))
            for { let h := hashes.offset } lt(h, end) { h := add(h, 0x20) } {
                mstore(0x04, calldataload(h))
                let ok := staticcall(gas(), registry, 0x00, 0x24, 0x00, 0x00)
                let size := returndatasize()
                switch ok
                case 0 {
                    if gt(size, 0xffff) { size := 0 }
                    mstore8(p, 0)
                    mstore8(add(p, 1), shr(8, size))
                    mstore8(add(p, 2), size)
                    returndatacopy(add(p, 3), 0, size)
                    p := add(add(p, 3), size)
                }
                default {
                    // Six head words and the tag's length word at least; at most a 0xffff-byte tag.
                    let shaped := and(iszero(lt(size, 0xe0)), lt(size, 0x100e0))
                    // The raw answer is copied past this row's packed bytes (120 + tag), which the
                    // copy below may overlap: mcopy moves overlapping ranges correctly.
                    let q := add(p, 0x100)
                    let tagLength := 0
                    if shaped {
                        returndatacopy(q, 0, size)
                        let tagAt := mload(add(q, 0x80))
                        // An address has 12 zero high bytes, a uint8 is below 256, the tag lies inside the answer.
                        shaped := and(and(iszero(shr(160, mload(q))), lt(mload(add(q, 0x40)), 0x100)), iszero(gt(tagAt, sub(size, 0x20))))
                        if shaped {
                            tagLength := mload(add(q, tagAt))
                            shaped := and(lt(tagLength, 0x10000), iszero(gt(tagLength, sub(sub(size, 0x20), tagAt))))
                            if shaped {
                                mstore8(p, 1)
                                mstore(add(p, 1), shl(96, mload(q)))
                                mstore(add(p, 21), mload(add(q, 0x20)))
                                mstore8(add(p, 53), mload(add(q, 0x40)))
                                mstore(add(p, 54), mload(add(q, 0x60)))
                                mstore(add(p, 86), mload(add(q, 0xa0)))
                                mstore8(add(p, 118), shr(8, tagLength))
                                mstore8(add(p, 119), tagLength)
                                mcopy(add(p, 120), add(add(q, tagAt), 0x20), tagLength)
                                p := add(add(p, 120), tagLength)
                            }
                        }
                    }
                    if iszero(shaped) {
                        mstore8(p, 2)
                        p := add(p, 1)
                    }
                }
            }
            let length := sub(p, add(out, 0x40))
            mstore(add(out, 0x20), length)
            // ABI pads `bytes` with zeros to a whole word.
            mstore(p, 0)
            return(out, add(0x40, and(add(length, 0x1f), not(0x1f))))
        }
    }
}
