// Aerodrome Slipstream on the devnet, for tests only (issue 62): its real sources from npm
// (`sphere-mezo-solidity-files` 1.2.0, `domains/aerodrome-slipstream`: core and periphery
// GPL-2.0-or-later, the gauges BUSL-1.1; run on a throwaway chain by the tests, never a
// dependency of the service), compiled with npm's solc 0.7.6 (optimizer 200 runs, istanbul) at
// the first Slipstream command, the build kept in node_modules/.cache (never committed). Both
// are pinned, with their integrity, in their own folder (devnet/slipstream/: the sources
// package's peers, hardhat among them, are not installed); Aerodrome's voting side by our stand-ins (contracts/SlipstreamStandIns.sol).
// Two generations, as on Base: each a CLFactory with its own NonfungiblePositionManager and
// CLGaugeFactory (the second naming the first as its legacy factory), each with a USDC/WETH pool
// of tick spacing 100 at the devnet's price and a gauge paying AERO (a devnet token); AERO
// priced by an AERO/USDC pool on the first generation (0.8 USDC per AERO, `aeroPool`).
// Commands (each on the deployment's state file; --generation 0 or 1, default 0):
//   slipstream                  deploy once per devnet (the addresses kept in the state file);
//                               print them
//   slip-mint --lower T --upper T --amount0 RAW --amount1 RAW [--recipient A]
//       the deployer mints (it holds and approved both tokens); prints tokenId and liquidity
//   slip-swap --sell usdc|weth --amount WHOLE   the deployer swaps on the generation's pool
//   slip-stake|slip-unstake|slip-harvest --account A --token-id N
//       the account's position into its pool's gauge (approve, deposit), out of it (withdraw,
//       which pays its AERO), or its AERO paid (getReward(tokenId))
//   slip-reward --amount WHOLE   the gauge's notify admin streams AERO to the epoch's end
//   slip-position-quote --token-id N [--block B]
//       at one block, as its owner (the gauge while staked): what decreaseLiquidity of all its
//       liquidity and collect would pay (staticCall), its liquidity and ticks
//   slip-transfer --account A --to B --token-id N   the account sends its position to B
//   slip-quote --token-id N [--block B]
//       at one block: positions(N) as its twelve words, the owner, the pool (getPool of its
//       tokens and word 5), its gauge, the staker's earned(owner, N) and stakedValues(owner)

import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ethers } from "ethers";

const GAS = { gasLimit: 15_000_000n };
const TICK_SPACING = 100;
const MAX_UINT = (1n << 256n) - 1n;

// The integer square root (Newton's method), for a pool's initial sqrt price.
function isqrt(n) {
  if (n < 2n) return n;
  let x = n, y = (x + 1n) / 2n;
  while (y < x) [x, y] = [y, (y + n / y) / 2n];
  return x;
}

export function commands({ here, connect, mined, deploy, print, erc20 }) {
  const folder = join(here, "slipstream");
  const root = join(folder, "node_modules/sphere-mezo-solidity-files/domains/aerodrome-slipstream");
  let deployed; // once per served devnet

  // solc 0.7.6's build of the contracts deployed, from the package's sources (imports read as
  // solc resolves them), cached by the sources' and the stand-ins' hash.
  async function build() {
    const entries = [
      "contracts/core/CLPool.sol", "contracts/core/CLFactory.sol",
      "contracts/periphery/NonfungiblePositionManager.sol", "contracts/periphery/SwapRouter.sol",
      "contracts/gauge/CLGauge.sol", "contracts/gauge/CLGaugeFactory.sol",
    ];
    const standIns = readFileSync(join(here, "contracts/SlipstreamStandIns.sol"), "utf8");
    const version = JSON.parse(readFileSync(join(root, "../../package.json"), "utf8")).version;
    const key = createHash("sha256").update(version + standIns + entries.join()).digest("hex").slice(0, 16);
    const cache = join(folder, `node_modules/.cache/slipstream-${key}.json`);
    if (existsSync(cache)) return JSON.parse(readFileSync(cache, "utf8"));
    const solc = createRequire(join(folder, "package.json"))("solc");
    const sources = Object.fromEntries(entries.map((p) => [p, { content: readFileSync(join(root, p), "utf8") }]));
    sources["SlipstreamStandIns.sol"] = { content: standIns };
    const input = {
      language: "Solidity",
      sources,
      settings: {
        optimizer: { enabled: true, runs: 200 },
        evmVersion: "istanbul",
        outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
      },
    };
    const findImports = (path) => {
      const file = join(root, path);
      return existsSync(file) ? { contents: readFileSync(file, "utf8") } : { error: `${path} not found` };
    };
    const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
    const errors = (output.errors ?? []).filter((e) => e.severity === "error");
    if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
    const of = (file, name) => {
      const c = output.contracts[file][name];
      return { abi: c.abi, bytecode: "0x" + c.evm.bytecode.object };
    };
    const built = {
      pool: of("contracts/core/CLPool.sol", "CLPool"),
      factory: of("contracts/core/CLFactory.sol", "CLFactory"),
      manager: of("contracts/periphery/NonfungiblePositionManager.sol", "NonfungiblePositionManager"),
      router: of("contracts/periphery/SwapRouter.sol", "SwapRouter"),
      gauge: of("contracts/gauge/CLGauge.sol", "CLGauge"),
      gaugeFactory: of("contracts/gauge/CLGaugeFactory.sol", "CLGaugeFactory"),
      registry: of("SlipstreamStandIns.sol", "DevnetFactoryRegistry"),
      minter: of("SlipstreamStandIns.sol", "DevnetMinter"),
      voter: of("SlipstreamStandIns.sol", "DevnetVoter"),
      noFactory: of("SlipstreamStandIns.sol", "DevnetNoFactory"),
    };
    mkdirSync(dirname(cache), { recursive: true });
    writeFileSync(cache, JSON.stringify(built));
    return built;
  }

  // Both generations on the devnet's tokens, the pools at its Uniswap pool's price, the
  // deployer approving both managers; AERO minted to the deployer (the notify admin).
  async function slipstream(opts) {
    const { state, signer, provider } = await connect(opts);
    // Kept in the state file: a command run on its own (not served) finds the deployment too.
    if (!deployed && state.slipstream && (await provider.getCode(state.slipstream.voter)) !== "0x") {
      deployed = { ...state.slipstream, abi: await build() };
    }
    if (deployed) return { ...deployed, state, signer, provider };
    const built = await build();
    const owner = await signer.getAddress();
    const at = async (contract) => contract.getAddress();
    const aero = await deploy(signer, erc20, "Aerodrome (devnet)", "AERO", 10n ** 30n, owner);
    const registry = await deploy(signer, built.registry);
    const minter = await deploy(signer, built.minter, await at(aero));
    const voter = await deploy(signer, built.voter, await at(registry), await at(minter));
    const implementation = await at(await deploy(signer, built.pool));
    const gaugeImplementation = await at(await deploy(signer, built.gauge));
    const uniswapPool = new ethers.Contract(state.pool, ["function slot0() view returns (uint160,int24,uint16,uint16,uint16,uint8,bool)"], provider);
    const [sqrtPriceX96] = await uniswapPool.slot0();
    const [token0, token1] = [state.token0, state.token1];
    let legacy = await at(await deploy(signer, built.noFactory));
    let legacyGauges = legacy;
    const generations = [];
    for (let g = 0; g < 2; g++) {
      const factory = await deploy(signer, built.factory, await at(voter), legacy, implementation);
      const manager = await deploy(signer, built.manager, await at(factory), state.weth, ethers.ZeroAddress, `Slipstream ${g}`, `AERO-CL-POS-${g}`);
      const router = await deploy(signer, built.router, await at(factory), state.weth);
      const gaugeFactory = await deploy(signer, built.gaugeFactory, await at(voter), gaugeImplementation, owner, 100n, legacyGauges);
      await mined(gaugeFactory.setNonfungiblePositionManager(await at(manager), GAS));
      await mined(registry.set(await at(factory), await at(gaugeFactory), GAS));
      await mined(factory.createPool(token0, token1, TICK_SPACING, sqrtPriceX96, GAS));
      const pool = await factory.getPool(token0, token1, TICK_SPACING);
      await mined(voter.createGauge(await at(gaugeFactory), pool, GAS));
      const gauge = await voter.gauges(pool);
      for (const token of [token0, token1]) {
        for (const spender of [manager, router]) {
          await mined(new ethers.Contract(token, erc20.abi, signer).approve(await at(spender), MAX_UINT, GAS));
        }
      }
      await mined(aero.approve(gauge, MAX_UINT, GAS));
      generations.push({
        factory: await at(factory), manager: await at(manager), router: await at(router),
        gaugeFactory: await at(gaugeFactory),
        pool, gauge, tickSpacing: TICK_SPACING,
      });
      [legacy, legacyGauges] = [await at(factory), await at(gaugeFactory)];
    }
    // AERO's price: an AERO/USDC pool on the first generation at 0.8 USDC per AERO, deep.
    const first = new ethers.Contract(generations[0].factory, built.factory.abi, signer);
    const firstManager = new ethers.Contract(generations[0].manager, built.manager.abi, signer);
    const aeroAddress = await at(aero);
    const aeroFirst = BigInt(aeroAddress) < BigInt(state.usdc);
    const [t0, t1] = aeroFirst ? [aeroAddress, state.usdc] : [state.usdc, aeroAddress];
    // token1 per token0, as 2^192 times the ratio's square root squared.
    const [num, den] = aeroFirst ? [4n, 5n] : [5n, 4n];
    const aeroSqrtPrice = isqrt((num << 192n) / den);
    await mined(first.createPool(t0, t1, TICK_SPACING, aeroSqrtPrice, GAS));
    const aeroPool = await first.getPool(t0, t1, TICK_SPACING);
    await mined(aero.approve(generations[0].manager, MAX_UINT, GAS));
    const deep = 10n ** 24n;
    await mined(firstManager.mint({
      token0: t0, token1: t1, tickSpacing: TICK_SPACING, tickLower: -887200, tickUpper: 887200,
      amount0Desired: deep, amount1Desired: deep, amount0Min: 0n, amount1Min: 0n,
      recipient: owner, deadline: 2n ** 40n, sqrtPriceX96: 0n,
    }, GAS));
    // The second manager's first id taken too (the deployer's small wide position on its
    // pool): both managers number the next position alike, as the tests' ids repeat.
    const secondManager = new ethers.Contract(generations[1].manager, built.manager.abi, signer);
    await mined(secondManager.mint({
      token0, token1, tickSpacing: TICK_SPACING, tickLower: -887200, tickUpper: 887200,
      amount0Desired: 10n ** 18n, amount1Desired: 10n ** 18n, amount0Min: 0n, amount1Min: 0n,
      recipient: owner, deadline: 2n ** 40n, sqrtPriceX96: 0n,
    }, GAS));
    const addresses = { aero: aeroAddress, aeroPool, voter: await at(voter), generations };
    const file = JSON.parse(readFileSync(opts.state, "utf8"));
    writeFileSync(opts.state, JSON.stringify({ ...file, slipstream: addresses }));
    deployed = { ...addresses, abi: built };
    return { ...deployed, state, signer, provider };
  }

  // The generation the command names, its contracts bound to the signer (or `account`'s).
  async function generation(opts) {
    const d = await slipstream(opts);
    const g = d.generations[Number(opts.generation ?? 0)];
    const signer = opts.account ? await d.provider.getSigner(opts.account) : d.signer;
    return {
      ...d, g,
      manager: new ethers.Contract(g.manager, d.abi.manager.abi, signer),
      gauge: new ethers.Contract(g.gauge, d.abi.gauge.abi, signer),
      pool: new ethers.Contract(g.pool, d.abi.pool.abi, d.provider),
      factory: new ethers.Contract(g.factory, d.abi.factory.abi, d.provider),
    };
  }

  const tokenId = (opts) => BigInt(opts["token-id"]);

  return {
    async slipstream(opts) {
      const d = await slipstream(opts);
      print({ aero: d.aero, aeroPool: d.aeroPool, voter: d.voter, generations: d.generations });
    },
    async "slip-mint"(opts) {
      const { manager, state, signer } = await generation(opts);
      const params = {
        token0: state.token0, token1: state.token1, tickSpacing: TICK_SPACING,
        tickLower: Number(opts.lower), tickUpper: Number(opts.upper),
        amount0Desired: BigInt(opts.amount0), amount1Desired: BigInt(opts.amount1),
        amount0Min: 0n, amount1Min: 0n, recipient: opts.recipient ?? await signer.getAddress(),
        deadline: 2n ** 40n, sqrtPriceX96: 0n,
      };
      const [id, liquidity, amount0, amount1] = await manager.mint.staticCall(params);
      const receipt = await mined(manager.mint(params, GAS));
      print({ block: receipt.blockNumber, tokenId: id, liquidity, amount0, amount1 });
    },
    async "slip-swap"(opts) {
      const { g, abi, state, signer } = await generation(opts);
      const router = new ethers.Contract(g.router, abi.router.abi, signer);
      const [tokenIn, tokenOut] = opts.sell === "usdc" ? [state.usdc, state.weth] : [state.weth, state.usdc];
      const params = {
        tokenIn, tokenOut, tickSpacing: TICK_SPACING, recipient: await signer.getAddress(),
        deadline: 2n ** 40n, amountIn: ethers.parseUnits(opts.amount, 18), amountOutMinimum: 0n,
        sqrtPriceLimitX96: 0n,
      };
      const receipt = await mined(router.exactInputSingle(params, GAS));
      print({ block: receipt.blockNumber });
    },
    async "slip-stake"(opts) {
      const { manager, gauge, g } = await generation(opts);
      await mined(manager.approve(g.gauge, tokenId(opts), GAS));
      const receipt = await mined(gauge.deposit(tokenId(opts), GAS));
      print({ block: receipt.blockNumber, gauge: g.gauge });
    },
    async "slip-unstake"(opts) {
      const { gauge } = await generation(opts);
      const receipt = await mined(gauge.withdraw(tokenId(opts), GAS));
      print({ block: receipt.blockNumber });
    },
    async "slip-harvest"(opts) {
      const { gauge } = await generation(opts);
      const receipt = await mined(gauge["getReward(uint256)"](tokenId(opts), GAS));
      print({ block: receipt.blockNumber });
    },
    async "slip-reward"(opts) {
      const { gauge } = await generation(opts);
      const receipt = await mined(gauge.notifyRewardWithoutClaim(ethers.parseUnits(opts.amount, 18), GAS));
      print({ block: receipt.blockNumber });
    },
    async "slip-position-quote"(opts) {
      const { g, abi, provider } = await generation(opts);
      // Unbound to a signer: each call is made as the position's owner.
      const manager = new ethers.Contract(g.manager, abi.manager.abi, provider);
      const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
      const id = tokenId(opts);
      const position = await manager.positions(id, { blockTag });
      const owner = await manager.ownerOf(id, { blockTag });
      const max = 2n ** 128n - 1n;
      const [amount0, amount1] = position.liquidity === 0n ? [0n, 0n] : await manager.decreaseLiquidity.staticCall(
        { tokenId: id, liquidity: position.liquidity, amount0Min: 0, amount1Min: 0, deadline: 2n ** 40n },
        { from: owner, blockTag },
      );
      const [fees0, fees1] = await manager.collect.staticCall(
        { tokenId: id, recipient: owner, amount0Max: max, amount1Max: max }, { from: owner, blockTag },
      );
      print({
        block: blockTag, owner, liquidity: position.liquidity, tickLower: position.tickLower,
        tickUpper: position.tickUpper, tickSpacing: position.tickSpacing, amount0, amount1, fees0, fees1,
      });
    },
    async "slip-transfer"(opts) {
      const { manager } = await generation(opts);
      const from = opts.account;
      const receipt = await mined(manager.transferFrom(from, opts.to, tokenId(opts), GAS));
      print({ block: receipt.blockNumber });
    },
    async "slip-quote"(opts) {
      const { manager, gauge, factory, pool, provider, g } = await generation(opts);
      const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
      const id = tokenId(opts);
      const data = manager.interface.encodeFunctionData("positions", [id]);
      const raw = await provider.call({ to: g.manager, data, blockTag });
      const words = [];
      for (let i = 0; i < 12; i++) words.push(BigInt("0x" + raw.slice(2 + 64 * i, 66 + 64 * i)));
      const owner = await manager.ownerOf(id, { blockTag });
      const position = manager.interface.decodeFunctionResult("positions", raw);
      const found = await factory.getPool(position.token0, position.token1, position.tickSpacing, { blockTag });
      const staked = owner.toLowerCase() === g.gauge.toLowerCase();
      const slot0 = await provider.call({ to: g.pool, data: pool.interface.encodeFunctionData("slot0"), blockTag });
      print({
        block: blockTag, words, owner, pool: found, gauge: g.gauge, staked,
        slot0Words: (slot0.length - 2) / 64, fee: await pool.fee({ blockTag }),
        stakedValues: staked ? [] : await gauge.stakedValues(owner, { blockTag }),
      });
    },
    async "slip-earned"(opts) {
      const { gauge, provider } = await generation(opts);
      const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
      print({
        block: blockTag,
        earned: await gauge.earned(opts.account, tokenId(opts), { blockTag }),
        stakedValues: await gauge.stakedValues(opts.account, { blockTag }),
      });
    },
  };
}
