// Hardhat's node for txengine's tests (internal/hardhattest): chain id 31337,
// Hardhat's default accounts (account #0 is the tests' faucet), the default
// (current) hardfork of the pinned Hardhat, and a block per transaction.
module.exports = {
  networks: {
    hardhat: {
      chainId: 31337,
      mining: { auto: true },
    },
  },
};
