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

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);

    function balanceOf(address holder) external view returns (uint256);
}

/// @title FlatFeePayer: escrow for flat-fee partner calls.
/// The service's relayer submits the caller's EIP-3009 authorization, whose nonce the caller
/// chose (x402's exact scheme signs a random one): the escrow is keyed by (from, nonce) and
/// records `ref`, the call it pays for. The amount waits here until the partner answers, then
/// `settle` splits it to the partner and the platform treasury, or `refund` returns it to the
/// payer. Each escrow is settled or refunded at most once, and only by the relayer.
/// A TransferWithAuthorization to this contract can be submitted to the token by anyone: its
/// amount then arrives here outside any escrow, and `adopt` puts it into one, so it too ends in
/// a settlement or a refund.
contract FlatFeePayer {
    enum State { None, Held, Settled, Refunded }

    struct Escrow {
        address payer;
        address partner;
        uint256 amount;
        uint256 partnerAmount;
        bytes32 ref;
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
    /// The sum of the escrows held: what this contract's balance must cover.
    uint256 public held;

    event Paid(bytes32 indexed id, bytes32 indexed ref, address indexed payer, uint256 amount, address partner, uint256 partnerAmount);
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

    /// escrowId keys the escrow of the authorization (from, nonce).
    function escrowId(address from, bytes32 nonce) public pure returns (bytes32) {
        return keccak256(abi.encode(from, nonce));
    }

    function pay(bytes32 ref, address partner, uint256 partnerAmount, Authorization calldata a) external onlyRelayer {
        bytes32 id = _hold(ref, partner, partnerAmount, a.from, a.nonce, a.value);
        if (a.viaReceive) {
            token.receiveWithAuthorization(a.from, address(this), a.value, a.validAfter, a.validBefore, a.nonce, a.v, a.r, a.s);
        } else {
            token.transferWithAuthorization(a.from, address(this), a.value, a.validAfter, a.validBefore, a.nonce, a.v, a.r, a.s);
        }
        emit Paid(id, ref, a.from, a.value, partner, partnerAmount);
    }

    /// adopt escrows an authorization someone else submitted to the token (its nonce used, its
    /// amount here beyond what the escrows hold). The relayer checked its signature names this
    /// contract and value, and found its transfer on chain.
    function adopt(bytes32 ref, address partner, uint256 partnerAmount, address from, bytes32 nonce, uint256 value) external onlyRelayer {
        require(token.authorizationState(from, nonce), "FlatFeePayer: authorization not used");
        require(token.balanceOf(address(this)) >= held + value, "FlatFeePayer: no unescrowed amount to adopt");
        bytes32 id = _hold(ref, partner, partnerAmount, from, nonce, value);
        emit Paid(id, ref, from, value, partner, partnerAmount);
    }

    function _hold(bytes32 ref, address partner, uint256 partnerAmount, address from, bytes32 nonce, uint256 value) private returns (bytes32 id) {
        id = escrowId(from, nonce);
        Escrow storage e = escrows[id];
        require(e.state == State.None, "FlatFeePayer: already paid");
        require(partnerAmount <= value, "FlatFeePayer: split exceeds the amount");
        e.payer = from;
        e.partner = partner;
        e.amount = value;
        e.partnerAmount = partnerAmount;
        e.ref = ref;
        e.state = State.Held;
        held += value;
    }

    function settle(bytes32 id) external onlyRelayer {
        Escrow storage e = escrows[id];
        require(e.state == State.Held, "FlatFeePayer: not held");
        e.state = State.Settled;
        held -= e.amount;
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
        held -= e.amount;
        require(token.transfer(e.payer, e.amount), "FlatFeePayer: refund transfer failed");
        emit Refunded(id, e.payer, e.amount);
    }
}
