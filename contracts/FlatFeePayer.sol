// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IEIP3009 {
    function receiveWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) external;

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) external;

    function transfer(address to, uint256 value) external returns (bool);
}

/// @title FlatFeePayer: escrow for flat-fee partner calls.
/// The service's relayer submits the caller's EIP-3009 authorization (whose nonce, derived from
/// the call's requestId, keys the escrow); the amount waits here until the partner answers,
/// then `settle` splits it to the partner and the platform treasury, or `refund` returns it to
/// the payer. Each escrow is settled or refunded at most once, and only by the relayer.
contract FlatFeePayer {
    enum State { None, Held, Settled, Refunded }

    struct Escrow {
        address payer;
        address partner;
        uint256 amount;
        uint256 partnerAmount;
        State state;
    }

    /// An EIP-3009 authorization to this contract; viaReceive selects receiveWithAuthorization
    /// (the spec's path) over transferWithAuthorization (x402's exact scheme).
    struct Authorization {
        address from;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        uint8 v;
        bytes32 r;
        bytes32 s;
        bool viaReceive;
    }

    IEIP3009 public immutable token;
    address public immutable relayer;
    address public immutable treasury;
    mapping(bytes32 => Escrow) public escrows;

    event Paid(bytes32 indexed id, address indexed payer, uint256 amount, address partner, uint256 partnerAmount);
    event Settled(bytes32 indexed id, address indexed partner, uint256 partnerAmount, uint256 platformAmount);
    event Refunded(bytes32 indexed id, address indexed payer, uint256 amount);

    constructor(address token_, address relayer_, address treasury_) {
        token = IEIP3009(token_);
        relayer = relayer_;
        treasury = treasury_;
    }

    modifier onlyRelayer() {
        require(msg.sender == relayer, "FlatFeePayer: only the relayer");
        _;
    }

    function pay(address partner, uint256 partnerAmount, Authorization calldata a) external onlyRelayer {
        Escrow storage e = escrows[a.nonce];
        require(e.state == State.None, "FlatFeePayer: already paid");
        require(partnerAmount <= a.value, "FlatFeePayer: split exceeds the amount");
        e.payer = a.from;
        e.partner = partner;
        e.amount = a.value;
        e.partnerAmount = partnerAmount;
        e.state = State.Held;
        if (a.viaReceive) {
            token.receiveWithAuthorization(a.from, address(this), a.value, a.validAfter, a.validBefore, a.nonce, a.v, a.r, a.s);
        } else {
            token.transferWithAuthorization(a.from, address(this), a.value, a.validAfter, a.validBefore, a.nonce, a.v, a.r, a.s);
        }
        emit Paid(a.nonce, a.from, a.value, partner, partnerAmount);
    }

    function settle(bytes32 id) external onlyRelayer {
        Escrow storage e = escrows[id];
        require(e.state == State.Held, "FlatFeePayer: not held");
        e.state = State.Settled;
        uint256 platformAmount = e.amount - e.partnerAmount;
        if (e.partnerAmount > 0) {
            require(token.transfer(e.partner, e.partnerAmount), "FlatFeePayer: partner transfer failed");
        }
        if (platformAmount > 0) {
            require(token.transfer(treasury, platformAmount), "FlatFeePayer: treasury transfer failed");
        }
        emit Settled(id, e.partner, e.partnerAmount, platformAmount);
    }

    function refund(bytes32 id) external onlyRelayer {
        Escrow storage e = escrows[id];
        require(e.state == State.Held, "FlatFeePayer: not held");
        e.state = State.Refunded;
        require(token.transfer(e.payer, e.amount), "FlatFeePayer: refund transfer failed");
        emit Refunded(id, e.payer, e.amount);
    }
}
