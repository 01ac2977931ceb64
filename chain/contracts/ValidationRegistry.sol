// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

interface IIdentityRegistry {
    function ownerOf(uint256 tokenId) external view returns (address);
    function getApproved(uint256 tokenId) external view returns (address);
    function isApprovedForAll(address owner, address operator) external view returns (bool);
}

/// @title ValidationRegistry: ERC-8004 (v2.0.0 ABI) "Validation Registry", written small for svc.
/// @notice The agent's owner (or an approved operator) asks a named validator to validate some
/// work under a request hash; only that validator may answer. Request hashes are first-come:
/// a hash names one request forever, so a reader can trust the row it finds under it.
contract ValidationRegistry {
    event ValidationRequest(
        address indexed validatorAddress, uint256 indexed agentId, string requestURI, bytes32 indexed requestHash
    );
    event ValidationResponse(
        address indexed validatorAddress,
        uint256 indexed agentId,
        bytes32 indexed requestHash,
        uint8 response,
        string responseURI,
        bytes32 responseHash,
        string tag
    );

    struct ValidationStatus {
        address validatorAddress;
        uint8 response;
        bool hasResponse;
        uint256 agentId;
        bytes32 responseHash;
        string tag;
        uint256 lastUpdate;
    }

    /// ERC-8004: a response is 0..100.
    uint8 public constant MAX_RESPONSE = 100;

    address private immutable _identityRegistry;
    mapping(bytes32 => ValidationStatus) private _validations;
    mapping(uint256 => bytes32[]) private _agentValidations;
    mapping(address => bytes32[]) private _validatorRequests;

    constructor(address identityRegistry_) {
        require(identityRegistry_ != address(0), "bad identity");
        _identityRegistry = identityRegistry_;
    }

    function getIdentityRegistry() external view returns (address) {
        return _identityRegistry;
    }

    /// ERC-8004 "Validation Registry": validationRequest, by the agent's owner or an approved operator.
    function validationRequest(address validatorAddress, uint256 agentId, string calldata requestURI, bytes32 requestHash)
        external
    {
        require(validatorAddress != address(0), "bad validator");
        require(_validations[requestHash].validatorAddress == address(0), "exists");
        IIdentityRegistry registry = IIdentityRegistry(_identityRegistry);
        address owner = registry.ownerOf(agentId);
        require(
            msg.sender == owner || registry.isApprovedForAll(owner, msg.sender) || registry.getApproved(agentId) == msg.sender,
            "Not authorized"
        );
        _validations[requestHash] = ValidationStatus({
            validatorAddress: validatorAddress,
            response: 0,
            hasResponse: false,
            agentId: agentId,
            responseHash: bytes32(0),
            tag: "",
            lastUpdate: block.timestamp
        });
        _agentValidations[agentId].push(requestHash);
        _validatorRequests[validatorAddress].push(requestHash);
        emit ValidationRequest(validatorAddress, agentId, requestURI, requestHash);
    }

    /// ERC-8004 "Validation Registry": validationResponse, only by the validator the request named.
    function validationResponse(
        bytes32 requestHash,
        uint8 response,
        string calldata responseURI,
        bytes32 responseHash,
        string calldata tag
    ) external {
        require(response <= MAX_RESPONSE, "resp>100");
        ValidationStatus storage s = _validations[requestHash];
        require(s.validatorAddress != address(0), "unknown");
        require(msg.sender == s.validatorAddress, "not validator");
        s.response = response;
        s.responseHash = responseHash;
        s.tag = tag;
        s.lastUpdate = block.timestamp;
        s.hasResponse = true;
        emit ValidationResponse(s.validatorAddress, s.agentId, requestHash, response, responseURI, responseHash, tag);
    }

    /// ERC-8004: reverts "unknown" for a hash never requested.
    function getValidationStatus(bytes32 requestHash)
        external
        view
        returns (
            address validatorAddress,
            uint256 agentId,
            uint8 response,
            bytes32 responseHash,
            string memory tag,
            uint256 lastUpdate
        )
    {
        ValidationStatus storage s = _validations[requestHash];
        require(s.validatorAddress != address(0), "unknown");
        return (s.validatorAddress, s.agentId, s.response, s.responseHash, s.tag, s.lastUpdate);
    }

    /// ERC-8004: count and average of answered validations of an agent, filtered by validators
    /// (empty: any) and tag (empty: any).
    function getSummary(uint256 agentId, address[] calldata validatorAddresses, string calldata tag)
        external
        view
        returns (uint64 count, uint8 avgResponse)
    {
        uint256 total;
        bytes32[] storage hashes = _agentValidations[agentId];
        bytes32 tagHash = keccak256(bytes(tag));
        for (uint256 i; i < hashes.length; i++) {
            ValidationStatus storage s = _validations[hashes[i]];
            if (!s.hasResponse) continue;
            if (bytes(tag).length != 0 && keccak256(bytes(s.tag)) != tagHash) continue;
            bool matched = validatorAddresses.length == 0;
            for (uint256 j; j < validatorAddresses.length && !matched; j++) {
                matched = s.validatorAddress == validatorAddresses[j];
            }
            if (!matched) continue;
            total += s.response;
            count++;
        }
        avgResponse = count > 0 ? uint8(total / count) : 0;
    }

    function getAgentValidations(uint256 agentId) external view returns (bytes32[] memory) {
        return _agentValidations[agentId];
    }

    function getValidatorRequests(address validatorAddress) external view returns (bytes32[] memory) {
        return _validatorRequests[validatorAddress];
    }
}
