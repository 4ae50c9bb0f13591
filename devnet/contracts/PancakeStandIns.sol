// SPDX-License-Identifier: Apache-2.0
// Test-only stand-ins for the two PancakeSwap v3 pieces npm does not ship, compiled by solc-js
// when the devnet starts. Nothing here runs outside the devnet.
pragma solidity 0.8.26;

/// Deploys the npm artifact's PancakeV3Pool creation code, unchanged, with CREATE2 and the
/// salt PancakeSwap's own deployer uses: pool addresses (and the periphery's init-code-hash
/// computation of them) are the protocol's. The code is stored once, then used for every pool.
contract DevnetPoolDeployer {
    struct Parameters {
        address factory;
        address token0;
        address token1;
        uint24 fee;
        int24 tickSpacing;
    }

    /// Read by the pool's constructor (`IPancakeV3PoolDeployer.parameters()`).
    Parameters public parameters;
    address public factoryAddress;
    bytes private poolCode;

    function setFactoryAddress(address factory) external {
        require(factoryAddress == address(0), "factory set");
        factoryAddress = factory;
    }

    function setPoolCode(bytes calldata code) external {
        require(poolCode.length == 0, "code set");
        poolCode = code;
    }

    function deploy(address factory, address token0, address token1, uint24 fee, int24 tickSpacing)
        external
        returns (address pool)
    {
        require(msg.sender == factoryAddress, "factory only");
        parameters = Parameters(factory, token0, token1, fee, tickSpacing);
        bytes memory code = poolCode;
        bytes32 salt = keccak256(abi.encode(token0, token1, fee));
        assembly {
            pool := create2(0, add(code, 32), mload(code), salt)
        }
        require(pool != address(0), "pool not deployed");
        delete parameters;
    }
}

/// A liquidity-mining pool stand-in (PancakeSwap's LMPool is not on npm): reward growth rises
/// by a fixed amount a second, whatever the position's range. CAKE amounts in the devnet's tests
/// come from this through MasterChefV3's `pendingCake` and `harvest`, never from PancakeSwap's
/// own reward maths.
contract DevnetLmPool {
    uint256 public immutable start;
    /// Reward growth a second, Q128 per unit of liquidity.
    uint256 public immutable growthPerSecondX128;

    constructor(uint256 growthPerSecondX128_) {
        start = block.timestamp;
        growthPerSecondX128 = growthPerSecondX128_;
    }

    function updatePosition(int24, int24, int128) external {}

    function getRewardGrowthInside(int24, int24) external view returns (uint256) {
        return (block.timestamp - start) * growthPerSecondX128;
    }

    function accumulateReward(uint32) external {}

    function crossLmTick(int24, bool) external {}
}

interface IDevnetFactory {
    function setLmPool(address pool, address lmPool) external;
}

/// Deploys a stand-in LM pool for MasterChefV3's `add` and registers it with the factory (whose
/// `lmPoolDeployer` this is), as PancakeSwap's LMPoolDeployer does.
contract DevnetLmPoolDeployer {
    address public immutable factory;
    uint256 public immutable growthPerSecondX128;

    constructor(address factory_, uint256 growthPerSecondX128_) {
        factory = factory_;
        growthPerSecondX128 = growthPerSecondX128_;
    }

    function deploy(address pool) external returns (address lmPool) {
        lmPool = address(new DevnetLmPool(growthPerSecondX128));
        IDevnetFactory(factory).setLmPool(pool, lmPool);
    }
}
