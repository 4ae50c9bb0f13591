// SPDX-License-Identifier: Apache-2.0
pragma solidity =0.7.6;

// What Aerodrome Slipstream's factories and gauges ask of Aerodrome's voting side, and no more,
// for the devnet only: the factory registry naming each pool factory's gauge factory, the
// minter naming AERO, a voter that creates gauges and keeps them alive, the fees' voting reward
// taking what a gauge passes it, and a "legacy" factory that knows no pool (what the first
// generation's factory is built with).

interface ISlipstreamGaugeFactory {
    function createGauge(address forwarder, address pool, address feesVotingReward, address rewardToken, bool isPool)
        external
        returns (address);
}

interface ITransferFrom {
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

contract DevnetFactoryRegistry {
    mapping(address => address) public gaugeFactoryOf;

    function set(address poolFactory, address gaugeFactory) external {
        gaugeFactoryOf[poolFactory] = gaugeFactory;
    }

    function factoriesToPoolFactory(address poolFactory) external view returns (address, address) {
        return (address(0), gaugeFactoryOf[poolFactory]);
    }
}

contract DevnetMinter {
    address public aero;

    constructor(address _aero) {
        aero = _aero;
    }

    function activePeriod() external view returns (uint256) {
        return (block.timestamp / 1 weeks) * 1 weeks;
    }

    function weekly() external pure returns (uint256) {
        return 10_000_000e18;
    }
}

contract DevnetFeesReward {
    function notifyRewardAmount(address token, uint256 amount) external {
        ITransferFrom(token).transferFrom(msg.sender, address(this), amount);
    }
}

contract DevnetNoFactory {
    function getPool(address, address, int24) external pure returns (address) {
        return address(0);
    }

    function notifyAdmin() external pure returns (address) {
        return address(0);
    }
}

contract DevnetVoter {
    address public factoryRegistry;
    address public minter;
    address public ve;
    address public feesReward;
    mapping(address => address) public gauges;
    mapping(address => address) public poolForGauge;
    mapping(address => bool) public isAlive;
    mapping(address => bool) public isGauge;

    constructor(address _factoryRegistry, address _minter) {
        factoryRegistry = _factoryRegistry;
        minter = _minter;
        feesReward = address(new DevnetFeesReward());
    }

    function createGauge(address gaugeFactory, address pool) external returns (address gauge) {
        gauge = ISlipstreamGaugeFactory(gaugeFactory).createGauge(
            address(0), pool, feesReward, DevnetMinter(minter).aero(), true
        );
        gauges[pool] = gauge;
        poolForGauge[gauge] = pool;
        isAlive[gauge] = true;
        isGauge[gauge] = true;
    }
}
