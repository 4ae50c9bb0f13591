// Uniswap v4 on the devnet (`up --v4 true`): the real contracts from npm, for tests only.
// v4-core 1.0.2's PoolManager is under BUSL-1.1, whose grant covers non-production use: it runs
// here, on a throwaway chain, and is never a dependency of the service. v4-periphery 1.0.3's
// PositionManager and StateView are MIT. Permit2 is the runtime code v4-periphery ships for
// tests, put at its canonical address.
//
// Two pools: native ETH / USDC (currency0 = address(0)) and USDC / WETH, no hooks; wide
// liquidity from the deployer on each. Commands (each on the deployment's state file):
//   v4-mint --pool eth|erc20 --lower T --upper T --liquidity L [--recipient ADDRESS]
//       the deployer pays, the recipient holds; prints the token id
//   v4-swap --pool eth|erc20 --zero-for-one true|false --amount RAW   (exact input, deployer)
//   v4-increase --account A --token-id N --liquidity L    the account pays (funded first)
//   v4-decrease --account A --token-id N --liquidity L    L = 0 collects the fees; prints what
//       the account received of each currency (ETH net of the transaction's gas)
//   v4-burn --account A --token-id N     BURN_POSITION (all its liquidity and fees taken)
//   v4-transfer --account A --token-id N --to ADDRESS
//   v4-quote --token-id N [--block B]   the position as the contracts answer: key, ticks,
//       liquidity, owner, slot0, fee growth inside now and at the last modification

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ethers } from "ethers";

export const NATIVE = ethers.ZeroAddress;
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const MAX_UINT = (1n << 256n) - 1n;
const MAX_UINT128 = (1n << 128n) - 1n;
const MAX_UINT160 = (1n << 160n) - 1n;
// Explicit limits: PositionManager.initializePool swallows a failed initialization given too
// little gas, and an estimate falls short when the pool writes fresh slots.
const GAS = { gasLimit: 8_000_000n };
const ACTIONS = {
  INCREASE_LIQUIDITY: 0x00, DECREASE_LIQUIDITY: 0x01, MINT_POSITION: 0x02, BURN_POSITION: 0x03,
  SETTLE_PAIR: 0x0d, TAKE_PAIR: 0x11, CLOSE_CURRENCY: 0x12, SWEEP: 0x14,
};
const KEY = "tuple(address currency0, address currency1, uint24 fee, int24 tickSpacing, address hooks)";
const coder = ethers.AbiCoder.defaultAbiCoder();

export function artifacts(here) {
  const load = (path) => JSON.parse(readFileSync(join(here, "node_modules", path), "utf8"));
  const periphery = (name) => load(`@uniswap/v4-periphery/foundry-out/${name}.sol/${name}.json`);
  const core = (name) => load(`@uniswap/v4-core/out/${name}.sol/${name}.json`);
  const source = readFileSync(
    join(here, "node_modules/@uniswap/v4-periphery/lib/permit2/test/utils/DeployPermit2.sol"), "utf8");
  const of = ({ abi, bytecode }) => ({ abi, bytecode: bytecode.object });
  return {
    poolManager: of(core("PoolManager")), swapRouter: of(core("PoolSwapTest")),
    positionManager: of(periphery("PositionManager")), stateView: of(periphery("StateView")),
    permit2Code: "0x" + source.match(/hex"([0-9a-f]+)"/)[1],
  };
}

const PERMIT2_ABI = [
  "function approve(address token, address spender, uint160 amount, uint48 expiration)",
];
const ERC20_ABI = [
  "function approve(address spender, uint256 amount) returns (bool)",
  "function balanceOf(address) view returns (uint256)",
  "function transfer(address to, uint256 amount) returns (bool)",
];

export const poolKey = (pool) => [pool.currency0, pool.currency1, pool.fee, pool.tickSpacing, pool.hooks];
export const poolId = (pool) => ethers.keccak256(coder.encode([KEY], [poolKey(pool)]));

function isqrt(n) {
  if (n < 2n) return n;
  let x = n, y = (x + 1n) / 2n;
  while (y < x) { x = y; y = (x + n / x) / 2n; }
  return x;
}

/** Lets `signer` pay the position manager `token` through Permit2 (and the swap router). */
async function allowPayments(signer, token, v4, mined) {
  if (token === NATIVE) return;
  const erc20 = new ethers.Contract(token, ERC20_ABI, signer);
  await mined(erc20.approve(PERMIT2, MAX_UINT, GAS));
  await mined(erc20.approve(v4.swapRouter, MAX_UINT, GAS));
  const permit2 = new ethers.Contract(PERMIT2, PERMIT2_ABI, signer);
  await mined(permit2.approve(token, v4.positionManager, MAX_UINT160, 2n ** 47n, GAS));
}

/** Deploys v4 beside the v3 devnet, its two pools with wide liquidity; the state's `v4`. */
export async function deployV4({ here, provider, signer, owner, usdc, weth, price, deploy, mined }) {
  const built = artifacts(here);
  await provider.send("anvil_setCode", [PERMIT2, built.permit2Code]);
  const manager = await deploy(signer, built.poolManager, owner);
  const managerAddress = await manager.getAddress();
  const positions = await deploy(signer, built.positionManager, managerAddress, PERMIT2, 300_000n, NATIVE, weth);
  const stateView = await deploy(signer, built.stateView, managerAddress);
  const router = await deploy(signer, built.swapRouter, managerAddress);
  const firstBlock = (await positions.deploymentTransaction().wait()).blockNumber;
  const v4 = {
    poolManager: managerAddress, positionManager: await positions.getAddress(),
    stateView: await stateView.getAddress(), swapRouter: await router.getAddress(), firstBlock,
  };
  for (const token of [usdc, weth]) await allowPayments(signer, token, v4, mined);
  // Both tokens and ETH have 18 decimals: the raw price is currency1 per currency0.
  const sorted = (a, b) => (BigInt(a) < BigInt(b) ? [a, b] : [b, a]);
  const [c0, c1] = sorted(usdc, weth);
  const usdcFirst = c0 === usdc;
  const pools = {
    eth: { currency0: NATIVE, currency1: usdc, fee: 3000, tickSpacing: 60, hooks: NATIVE,
      sqrtPriceX96: isqrt(price << 192n) },
    erc20: { currency0: c0, currency1: c1, fee: 500, tickSpacing: 10, hooks: NATIVE,
      sqrtPriceX96: usdcFirst ? isqrt((1n << 192n) / price) : isqrt(price << 192n) },
  };
  v4.pools = {};
  for (const [name, pool] of Object.entries(pools)) {
    await mined(manager.initialize(poolKey(pool), pool.sqrtPriceX96, GAS));
    const [, tick] = await stateView.getSlot0(poolId(pool));
    const around = (t) => Math.floor(t / pool.tickSpacing) * pool.tickSpacing;
    const { sqrtPriceX96, ...key } = pool;
    v4.pools[name] = { ...key, id: poolId(pool), tick: Number(tick),
      wideLower: around(Number(tick) - 20000), wideUpper: around(Number(tick) + 20000) };
  }
  for (const name of Object.keys(pools)) {
    const p = v4.pools[name];
    await mintPosition(provider, signer, v4, p, p.wideLower, p.wideUpper, 10n ** 21n, owner, mined);
  }
  return v4;
}

function unlockData(actions, params) {
  return coder.encode(["bytes", "bytes[]"], [ethers.hexlify(Uint8Array.from(actions)), params]);
}

// ETH is paid as value (the unused part swept back); ERC-20s through Permit2.
const ethValue = (pool, amount0Max) => (pool.currency0 === NATIVE ? amount0Max : 0n);

async function mintPosition(provider, signer, v4, pool, lower, upper, liquidity, recipient, mined) {
  const positions = new ethers.Contract(v4.positionManager, [
    "function nextTokenId() view returns (uint256)",
    "function modifyLiquidities(bytes unlockData, uint256 deadline) payable",
  ], signer);
  const max = 10n ** 27n;
  const value = pool.currency0 === NATIVE ? 10n ** 21n : 0n;
  const data = unlockData([ACTIONS.MINT_POSITION, ACTIONS.SETTLE_PAIR, ACTIONS.SWEEP], [
    coder.encode([KEY, "int24", "int24", "uint256", "uint128", "uint128", "address", "bytes"],
      [poolKey(pool), lower, upper, liquidity, value || max, max, recipient, "0x"]),
    coder.encode(["address", "address"], [pool.currency0, pool.currency1]),
    coder.encode(["address", "address"], [NATIVE, await signer.getAddress()]),
  ]);
  const tokenId = await positions.nextTokenId();
  const receipt = await mined(positions.modifyLiquidities(data, 2n ** 40n, { ...GAS, value }));
  return { tokenId, block: receipt.blockNumber };
}

async function balances(provider, pool, account, blockTag) {
  return Promise.all([pool.currency0, pool.currency1].map((c) => (c === NATIVE
    ? provider.getBalance(account, blockTag)
    : new ethers.Contract(c, ERC20_ABI, provider).balanceOf(account, { blockTag }))));
}

async function keyOf(provider, v4, tokenId) {
  const positions = new ethers.Contract(v4.positionManager, [
    `function getPoolAndPositionInfo(uint256) view returns (${KEY}, uint256)`,
  ], provider);
  const [key] = await positions.getPoolAndPositionInfo(tokenId);
  return { currency0: key.currency0, currency1: key.currency1, fee: Number(key.fee),
    tickSpacing: Number(key.tickSpacing), hooks: key.hooks };
}

/** The v4 commands, over `connect` (the devnet's state, provider and deployer). */
export function commands({ connect, mined, print }) {
  const v4Of = async (opts) => {
    const c = await connect(opts);
    return { ...c, v4: c.state.v4 };
  };
  return {
    async "v4-mint"(opts) {
      const { provider, signer, v4, state } = await v4Of(opts);
      const pool = v4.pools[opts.pool];
      const out = await mintPosition(provider, signer, v4, pool, Number(opts.lower), Number(opts.upper),
        BigInt(opts.liquidity), opts.recipient ?? state.owner, mined);
      print(out);
    },
    async "v4-swap"(opts) {
      const { signer, v4 } = await v4Of(opts);
      const pool = v4.pools[opts.pool];
      const router = new ethers.Contract(v4.swapRouter, [
        `function swap(${KEY} key, tuple(bool zeroForOne, int256 amountSpecified, uint160 sqrtPriceLimitX96) params, tuple(bool takeClaims, bool settleUsingBurn) settings, bytes hookData) payable returns (int256)`,
      ], signer);
      const zeroForOne = opts["zero-for-one"] === "true";
      const amount = BigInt(opts.amount);
      const limit = zeroForOne ? 4295128740n : 1461446703485210103287273052203988822378723970341n;
      const value = zeroForOne && pool.currency0 === NATIVE ? amount : 0n;
      const receipt = await mined(router.swap(poolKey(pool), [zeroForOne, -amount, limit], [false, false], "0x",
        { ...GAS, value }));
      print({ block: receipt.blockNumber });
    },
    async "v4-increase"(opts) {
      const { provider, v4 } = await v4Of(opts);
      const signer = await provider.getSigner(opts.account);
      const tokenId = BigInt(opts["token-id"]);
      const pool = await keyOf(provider, v4, tokenId);
      for (const c of [pool.currency0, pool.currency1]) await allowPayments(signer, c, v4, mined);
      const max = 10n ** 27n;
      const value = ethValue(pool, 10n ** 20n);
      // The fees an increase pays out may exceed its cost: each currency closed either way.
      const data = unlockData([ACTIONS.INCREASE_LIQUIDITY, ACTIONS.CLOSE_CURRENCY, ACTIONS.CLOSE_CURRENCY, ACTIONS.SWEEP], [
        coder.encode(["uint256", "uint256", "uint128", "uint128", "bytes"],
          [tokenId, BigInt(opts.liquidity), value || max, max, "0x"]),
        coder.encode(["address"], [pool.currency0]),
        coder.encode(["address"], [pool.currency1]),
        coder.encode(["address", "address"], [NATIVE, opts.account]),
      ]);
      const positions = new ethers.Contract(v4.positionManager,
        ["function modifyLiquidities(bytes unlockData, uint256 deadline) payable"], signer);
      const receipt = await mined(positions.modifyLiquidities(data, 2n ** 40n, { ...GAS, value }));
      print({ block: receipt.blockNumber });
    },
    async "v4-decrease"(opts) {
      const { provider, v4 } = await v4Of(opts);
      const signer = await provider.getSigner(opts.account);
      const tokenId = BigInt(opts["token-id"]);
      const pool = await keyOf(provider, v4, tokenId);
      const data = unlockData([ACTIONS.DECREASE_LIQUIDITY, ACTIONS.TAKE_PAIR], [
        coder.encode(["uint256", "uint256", "uint128", "uint128", "bytes"],
          [tokenId, BigInt(opts.liquidity), 0n, 0n, "0x"]),
        coder.encode(["address", "address", "address"], [pool.currency0, pool.currency1, opts.account]),
      ]);
      const positions = new ethers.Contract(v4.positionManager,
        ["function modifyLiquidities(bytes unlockData, uint256 deadline) payable"], signer);
      const before = await balances(provider, pool, opts.account, "latest");
      const receipt = await mined(positions.modifyLiquidities(data, 2n ** 40n, GAS));
      const after = await balances(provider, pool, opts.account, receipt.blockNumber);
      const gas = pool.currency0 === NATIVE ? receipt.gasUsed * receipt.gasPrice : 0n;
      print({ block: receipt.blockNumber, amount0: after[0] - before[0] + gas, amount1: after[1] - before[1] });
    },
    async "v4-burn"(opts) {
      const { provider, v4 } = await v4Of(opts);
      const signer = await provider.getSigner(opts.account);
      const tokenId = BigInt(opts["token-id"]);
      const pool = await keyOf(provider, v4, tokenId);
      const data = unlockData([ACTIONS.BURN_POSITION, ACTIONS.TAKE_PAIR], [
        coder.encode(["uint256", "uint128", "uint128", "bytes"], [tokenId, 0n, 0n, "0x"]),
        coder.encode(["address", "address", "address"], [pool.currency0, pool.currency1, opts.account]),
      ]);
      const positions = new ethers.Contract(v4.positionManager,
        ["function modifyLiquidities(bytes unlockData, uint256 deadline) payable"], signer);
      const receipt = await mined(positions.modifyLiquidities(data, 2n ** 40n, GAS));
      print({ block: receipt.blockNumber });
    },
    async "v4-transfer"(opts) {
      const { provider, v4 } = await v4Of(opts);
      const positions = new ethers.Contract(v4.positionManager,
        ["function transferFrom(address from, address to, uint256 id)"], await provider.getSigner(opts.account));
      const receipt = await mined(positions.transferFrom(opts.account, opts.to, BigInt(opts["token-id"]), GAS));
      print({ block: receipt.blockNumber });
    },
    async "v4-quote"(opts) {
      const { provider, v4 } = await v4Of(opts);
      const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
      const tokenId = BigInt(opts["token-id"]);
      const positions = new ethers.Contract(v4.positionManager, [
        `function getPoolAndPositionInfo(uint256) view returns (${KEY}, uint256)`,
        "function getPositionLiquidity(uint256) view returns (uint128)",
        "function ownerOf(uint256) view returns (address)",
      ], provider);
      const view = new ethers.Contract(v4.stateView, [
        "function getSlot0(bytes32) view returns (uint160, int24, uint24, uint24)",
        "function getPositionInfo(bytes32, address, int24, int24, bytes32) view returns (uint128, uint256, uint256)",
        "function getFeeGrowthInside(bytes32, int24, int24) view returns (uint256, uint256)",
      ], provider);
      const [key, info] = await positions.getPoolAndPositionInfo(tokenId, { blockTag });
      const signed24 = (v) => Number(BigInt.asIntN(24, v));
      const [lower, upper] = [signed24(info >> 8n), signed24(info >> 32n)];
      const id = poolId({ currency0: key.currency0, currency1: key.currency1, fee: key.fee,
        tickSpacing: key.tickSpacing, hooks: key.hooks });
      const salt = ethers.zeroPadValue(ethers.toBeHex(tokenId), 32);
      const [slot0, last, inside, liquidity, owner] = await Promise.all([
        view.getSlot0(id, { blockTag }),
        view.getPositionInfo(id, v4.positionManager, lower, upper, salt, { blockTag }),
        view.getFeeGrowthInside(id, lower, upper, { blockTag }),
        positions.getPositionLiquidity(tokenId, { blockTag }),
        positions.ownerOf(tokenId, { blockTag }),
      ]);
      const fees = [0, 1].map((i) => (((inside[i] - last[1 + i]) & MAX_UINT) * liquidity) >> 128n);
      print({ block: blockTag, poolId: id, currency0: key.currency0, currency1: key.currency1,
        fee: key.fee, tickSpacing: key.tickSpacing, hooks: key.hooks, tickLower: lower, tickUpper: upper,
        liquidity, owner, sqrtPriceX96: slot0[0], tick: slot0[1], fees0: fees[0] & MAX_UINT128,
        fees1: fees[1] & MAX_UINT128 });
    },
  };
}
