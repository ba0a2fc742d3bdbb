// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

interface IERC20Transfer {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// @title Disperse
/// @notice Sends ETH or an ERC-20 token to many recipients in one
/// transaction: a sender pool's treasury refills its members with one
/// transaction per asset (docs/pools.md). It holds nothing between calls
/// and has no owner: disperseToken moves only the caller's tokens, within
/// the allowance the caller gave it.
contract Disperse {
    error LengthMismatch(uint256 recipients, uint256 values);
    error WrongValue(uint256 sent, uint256 total);
    error SendFailed(address recipient, uint256 value);
    error TransferFailed(address token, address recipient, uint256 value);

    /// @notice Sends values[i] wei to recipients[i]; msg.value must be
    /// their sum. Reverts, sending nothing, if any send fails.
    function disperseEther(address[] calldata recipients, uint256[] calldata values) external payable {
        if (recipients.length != values.length) revert LengthMismatch(recipients.length, values.length);
        uint256 total = 0;
        for (uint256 i = 0; i < recipients.length; i++) {
            total += values[i];
        }
        if (total != msg.value) revert WrongValue(msg.value, total);
        for (uint256 i = 0; i < recipients.length; i++) {
            (bool ok,) = recipients[i].call{value: values[i]}("");
            if (!ok) revert SendFailed(recipients[i], values[i]);
        }
    }

    /// @notice Moves values[i] of token from the caller to recipients[i]
    /// (transferFrom: the caller approves this contract first). Reverts,
    /// moving nothing, if any transfer fails.
    function disperseToken(address token, address[] calldata recipients, uint256[] calldata values) external {
        if (recipients.length != values.length) revert LengthMismatch(recipients.length, values.length);
        for (uint256 i = 0; i < recipients.length; i++) {
            if (!IERC20Transfer(token).transferFrom(msg.sender, recipients[i], values[i])) {
                revert TransferFailed(token, recipients[i], values[i]);
            }
        }
    }
}
