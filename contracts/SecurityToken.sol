// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {TxToken} from "./TxToken.sol";

/// @title SecurityToken
/// @notice An ERC-20 with 18 decimals whose transfers are limited to an
/// allow-list kept by the owner: sender and recipient must both be allowed.
/// The owner is allowed at construction and may mint (to allowed accounts).
/// Everything but the allow-list is TxToken's.
contract SecurityToken is TxToken {
    mapping(address => bool) private _allowed;

    event Allowed(address indexed account);
    event Disallowed(address indexed account);

    error NotAllowed(address account);

    constructor(string memory name_, string memory symbol_, uint256 initialSupply, address owner_)
        TxToken(name_, symbol_, 0, owner_)
    {
        _allowed[owner_] = true;
        emit Allowed(owner_);
        _mint(owner_, initialSupply);
    }

    /// @notice Adds account to the transfer allow-list.
    function allow(address account) external onlyOwner {
        if (account == address(0)) revert ZeroAddress();
        _allowed[account] = true;
        emit Allowed(account);
    }

    /// @notice Removes account from the transfer allow-list.
    function disallow(address account) external onlyOwner {
        _allowed[account] = false;
        emit Disallowed(account);
    }

    /// @notice Tells whether account may send and receive tokens.
    function isAllowed(address account) external view returns (bool) {
        return _allowed[account];
    }

    /// @dev Sender (unless minting) and recipient must be allowed.
    function _beforeTransfer(address from, address to) internal view override {
        if (from != address(0) && !_allowed[from]) revert NotAllowed(from);
        if (!_allowed[to]) revert NotAllowed(to);
    }
}
