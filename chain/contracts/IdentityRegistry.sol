// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title IdentityRegistry: ERC-8004 (v2.0.0 ABI) "Identity Registry", written small for svc.
/// @notice Agents are ERC-721 tokens with ids from 0 (ERC-8004 "Identity Registry": the agentId
/// is the tokenId). Each agent has an optional verified wallet (ERC-8004 "agentWallet"), set by
/// the owner with an EIP-712 signature of the new wallet and cleared on every transfer so that
/// a wallet never outlives the owner who vouched for it.
contract IdentityRegistry {
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    // ERC-721
    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
    // ERC-8004 "Identity Registry" events
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue);
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    string public constant name = "AgentIdentity";
    string public constant symbol = "AGENT";

    // ERC-8004: setAgentWallet proves control of the new wallet with an EIP-712 signature.
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant AGENT_WALLET_SET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    uint256 private constant MAX_DEADLINE_DELAY = 5 minutes;
    bytes32 private constant RESERVED_AGENT_WALLET_KEY_HASH = keccak256("agentWallet");
    // secp256k1n / 2: signatures with a higher s are malleable copies (EIP-2).
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    uint256 private _lastId;
    mapping(uint256 => address) private _owners;
    mapping(address => uint256) private _balances;
    mapping(uint256 => address) private _tokenApprovals;
    mapping(address => mapping(address => bool)) private _operatorApprovals;
    mapping(uint256 => string) private _tokenURIs;
    mapping(uint256 => mapping(string => bytes)) private _metadata;
    mapping(uint256 => address) private _agentWallet;

    // ---- ERC-8004 registration ----

    function register() external returns (uint256 agentId) {
        agentId = _register("");
    }

    function register(string memory agentURI) external returns (uint256 agentId) {
        agentId = _register(agentURI);
    }

    function register(string memory agentURI, MetadataEntry[] memory metadata) external returns (uint256 agentId) {
        agentId = _register(agentURI);
        for (uint256 i; i < metadata.length; i++) {
            _setMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
    }

    function _register(string memory agentURI) private returns (uint256 agentId) {
        agentId = _lastId++;
        // ERC-8004: the registering address is the agent's wallet until the owner sets another.
        _agentWallet[agentId] = msg.sender;
        _tokenURIs[agentId] = agentURI;
        emit Registered(agentId, agentURI, msg.sender);
        _mint(msg.sender, agentId);
    }

    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _requireOwnerOrOperator(agentId);
        _tokenURIs[agentId] = newURI;
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    function tokenURI(uint256 agentId) external view returns (string memory) {
        ownerOf(agentId);
        return _tokenURIs[agentId];
    }

    function getMetadata(uint256 agentId, string memory metadataKey) external view returns (bytes memory) {
        return _metadata[agentId][metadataKey];
    }

    function setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) external {
        _requireOwnerOrOperator(agentId);
        _setMetadata(agentId, metadataKey, metadataValue);
    }

    function _setMetadata(uint256 agentId, string memory key, bytes memory value) private {
        // ERC-8004: "agentWallet" is reserved; only setAgentWallet may write it.
        require(keccak256(bytes(key)) != RESERVED_AGENT_WALLET_KEY_HASH, "reserved key");
        _metadata[agentId][key] = value;
        emit MetadataSet(agentId, key, key, value);
    }

    // ---- ERC-8004 agent wallet ----

    function getAgentWallet(uint256 agentId) external view returns (address) {
        ownerOf(agentId);
        return _agentWallet[agentId];
    }

    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external {
        require(newWallet != address(0), "bad wallet");
        require(block.timestamp <= deadline, "expired");
        require(deadline <= block.timestamp + MAX_DEADLINE_DELAY, "deadline too far");
        address owner = _requireOwnerOrOperator(agentId);
        bytes32 structHash = keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, owner, deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
        require(_recover(digest, signature) == newWallet, "invalid wallet sig");
        _agentWallet[agentId] = newWallet;
        _metadata[agentId]["agentWallet"] = abi.encodePacked(newWallet);
        emit MetadataSet(agentId, "agentWallet", "agentWallet", abi.encodePacked(newWallet));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(
            abi.encode(DOMAIN_TYPEHASH, keccak256("ERC8004IdentityRegistry"), keccak256("1"), block.chainid, address(this))
        );
    }

    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address signer) {
        require(sig.length == 65, "invalid wallet sig");
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (v < 27) v += 27;
        require(uint256(s) <= HALF_N && (v == 27 || v == 28), "invalid wallet sig");
        signer = ecrecover(digest, v, r, s);
        require(signer != address(0), "invalid wallet sig");
    }

    function _requireOwnerOrOperator(uint256 agentId) private view returns (address owner) {
        owner = ownerOf(agentId);
        require(
            msg.sender == owner || _operatorApprovals[owner][msg.sender] || _tokenApprovals[agentId] == msg.sender,
            "Not authorized"
        );
    }

    // ---- ERC-721 ----

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x01ffc9a7 // ERC-165
            || interfaceId == 0x80ac58cd // ERC-721
            || interfaceId == 0x5b5e139f; // ERC-721 metadata
    }

    function balanceOf(address owner) external view returns (uint256) {
        require(owner != address(0), "zero address");
        return _balances[owner];
    }

    function ownerOf(uint256 tokenId) public view returns (address owner) {
        owner = _owners[tokenId];
        require(owner != address(0), "nonexistent token");
    }

    function approve(address to, uint256 tokenId) external {
        address owner = ownerOf(tokenId);
        require(msg.sender == owner || _operatorApprovals[owner][msg.sender], "Not authorized");
        _tokenApprovals[tokenId] = to;
        emit Approval(owner, to, tokenId);
    }

    function getApproved(uint256 tokenId) external view returns (address) {
        ownerOf(tokenId);
        return _tokenApprovals[tokenId];
    }

    function setApprovalForAll(address operator, bool approved) external {
        require(operator != address(0), "bad operator");
        _operatorApprovals[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function isApprovedForAll(address owner, address operator) external view returns (bool) {
        return _operatorApprovals[owner][operator];
    }

    function transferFrom(address from, address to, uint256 tokenId) public {
        address owner = ownerOf(tokenId);
        require(owner == from, "wrong from");
        require(to != address(0), "zero address");
        require(
            msg.sender == owner || _operatorApprovals[owner][msg.sender] || _tokenApprovals[tokenId] == msg.sender,
            "Not authorized"
        );
        delete _tokenApprovals[tokenId];
        _balances[from] -= 1;
        _balances[to] += 1;
        _owners[tokenId] = to;
        // ERC-8004: the verified wallet is cleared on transfer; the new owner must set its own.
        _agentWallet[tokenId] = address(0);
        _metadata[tokenId]["agentWallet"] = "";
        emit MetadataSet(tokenId, "agentWallet", "agentWallet", "");
        emit Transfer(from, to, tokenId);
    }

    function safeTransferFrom(address from, address to, uint256 tokenId) external {
        safeTransferFrom(from, to, tokenId, "");
    }

    function safeTransferFrom(address from, address to, uint256 tokenId, bytes memory data) public {
        transferFrom(from, to, tokenId);
        _checkReceiver(from, to, tokenId, data);
    }

    function _mint(address to, uint256 tokenId) private {
        _balances[to] += 1;
        _owners[tokenId] = to;
        emit Transfer(address(0), to, tokenId);
        _checkReceiver(address(0), to, tokenId, "");
    }

    function _checkReceiver(address from, address to, uint256 tokenId, bytes memory data) private {
        if (to.code.length == 0) return;
        (bool ok, bytes memory ret) =
            to.call(abi.encodeWithSelector(0x150b7a02, msg.sender, from, tokenId, data));
        require(ok && ret.length == 32 && abi.decode(ret, (bytes4)) == 0x150b7a02, "unsafe recipient");
    }
}
