// A local EVM chain for tests and demos: anvil on loopback with real Uniswap v3 contracts from
// their npm artifacts (v3-core 1.0.1's factory and pool, v3-periphery 1.4.4's position manager
// and router), two test tokens, one pool with liquidity, and commands to swap and read.
//
//   node devnet/devnet.mjs up [--catalog-out FILE] [--state-out FILE] [--price P] [--pancake true] [--since UNIX]
//       start anvil, deploy, write a catalog file (the format of shared/data/pools.json) and
//       the deployment's addresses; print {"rpc": URL, ...} on one line; run until killed. --since
//       starts the chain's clock at that unix time (its genesis), so blocks can be placed after it.
//       --serve true then runs commands sent on stdin, one JSON line each, answering one line
//       each on stdout (the tests' way: no node started per command).
//       --pancake true also deploys PancakeSwap v3 (its real contracts from npm) and
//       MasterChefV3 on the same tokens: a second position manager, its pool in the catalog
//   Every command that acts on a position or the pool takes --protocol pancakeswap-v3 to act
//   on PancakeSwap's (default Uniswap's).
//   node devnet/devnet.mjs swap  --state FILE --sell usdc|weth --amount WHOLE_TOKENS
//   node devnet/devnet.mjs pool  --state FILE [--block N] [--ticks T,T...] [--address POOL]
//       the pool's getters at a block (the latest by default), with ticks(t) of the ticks given
//       (--address: another pool of the protocol, e.g. PancakeSwap's CAKE/USDC)
//   node devnet/devnet.mjs mint  --state FILE --lower T --upper T --amount0 RAW --amount1 RAW
//       [--recipient ADDRESS] [--token0 A --token1 B --fee F]   (the deployer pays; the recipient holds)
//   node devnet/devnet.mjs new-pool --state FILE --symbol S [--fee F] [--with SYMBOL2]
//       [--token ADDRESS] [--price N]
//       a token of its own (18 decimals; or the token at ADDRESS, deployed by an earlier
//       new-pool) and its pool at 1:1 with WETH, or at N WETH per token (or with a second token
//       of its own, SYMBOL2: a pool no route prices), outside any catalog; prints its tick
//   node devnet/devnet.mjs account --state FILE --index N     anvil's unlocked account N
//   node devnet/devnet.mjs sign --state FILE --account ADDRESS --message TEXT
//       personal_sign (EIP-191) by the unlocked account: what a wallet answers a challenge with
//   node devnet/devnet.mjs withdraw --state FILE --account ADDRESS --token-id N [--liquidity L]
//       decreaseLiquidity of all the position's liquidity (or L of it), its fees left uncollected
//   node devnet/devnet.mjs collect --state FILE --account ADDRESS --token-id N [--amount0 RAW --amount1 RAW]
//       collect to the account what the position is owed (or at most RAW of each token)
//   node devnet/devnet.mjs transfer --state FILE --account ADDRESS --token-id N --to ADDRESS
//   node devnet/devnet.mjs position-quote --state FILE --token-id N [--block B]
//       at one block: positions(N), the owner, what decreasing all its liquidity and what
//       collect would pay the owner (eth_call, nothing sent)
//   node devnet/devnet.mjs burn-quote --state FILE --lower T --upper T --liquidity L
//       what burning L of the position manager's position would pay (eth_call, nothing sent)
//   node devnet/devnet.mjs collect-quote --state FILE --token-id N
//       what collect would pay the owner of position N now: its fees (eth_call, nothing sent)
//   node devnet/devnet.mjs fund --state FILE --account ADDRESS [--amount WHOLE_TOKENS]
//       the deployer sends the account both tokens (default 1,000,000 each)
//   node devnet/devnet.mjs approve --state FILE --account ADDRESS --token usdc|weth|ADDRESS --amount RAW
//       the account approves the position manager for RAW base units
//   node devnet/devnet.mjs allowance --state FILE --account ADDRESS --token usdc|weth|ADDRESS
//       the account's allowance to the position manager and its balance
//   node devnet/devnet.mjs stake|unstake|harvest --state FILE --account ADDRESS --token-id N
//   node devnet/devnet.mjs chef-collect --state FILE --account ADDRESS --token-id N
//   node devnet/devnet.mjs chef-decrease --state FILE --account ADDRESS --token-id N --liquidity L
//       MasterChefV3 as the staker: stake (the position's safeTransferFrom to the chef), unstake
//       (withdraw, harvesting to the account), harvest, collect, decrease through the chef
//   node devnet/devnet.mjs staking-quote --state FILE --token-id N [--block B]
//       at one block: the chef's userPositionInfos (user, liquidity), pendingCake, the owner
//   --v4 true also deploys Uniswap v4 (devnet/v4.mjs: its pools, its v4-* commands)
//   safe-create, safe-sign, safe-exec: Safe contract wallets (devnet/safe.mjs)
//   node devnet/devnet.mjs events --state FILE --hash TX
//       the position manager's events in the transaction, decoded from its ABI, and its block's time
//
// Every command prints one JSON line; integers are decimal strings.

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { ethers } from "ethers";
import { commands as safeCommands } from "./safe.mjs";
import { commands as slipstreamCommands } from "./slipstream.mjs";
import { commands as v4Commands, deployV4 } from "./v4.mjs";

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const artifact = (path) => require(join(here, "node_modules", path));
const ERC20 = artifact("@openzeppelin/contracts/build/contracts/ERC20PresetFixedSupply.json");
const FACTORY = artifact("@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json");
const POOL = artifact("@uniswap/v3-core/artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json");
const MANAGER = artifact(
  "@uniswap/v3-periphery/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json",
);
const ROUTER = artifact("@uniswap/v3-periphery/artifacts/contracts/SwapRouter.sol/SwapRouter.json");
// Uniswap's SwapRouter02 (swap-router-contracts 1.3.1, GPL-2.0-or-later) and QuoterV2: the
// zap's swap and mint in one multicall, and the quotes it is checked against.
const ROUTER02 = artifact("@uniswap/swap-router-contracts/artifacts/contracts/SwapRouter02.sol/SwapRouter02.json");
const QUOTER_V2 = artifact("@uniswap/v3-periphery/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json");
// PancakeSwap v3 (`up --pancake`): the npm artifacts of its factory, pool, position manager and
// router, MasterChefV3, and two test-only stand-ins of ours (contracts/PancakeStandIns.sol).
const PANCAKE = {
  FACTORY: artifact("@pancakeswap/v3-core/artifacts/contracts/PancakeV3Factory.sol/PancakeV3Factory.json"),
  POOL: artifact("@pancakeswap/v3-core/artifacts/contracts/PancakeV3Pool.sol/PancakeV3Pool.json"),
  MANAGER: artifact("@pancakeswap/v3-periphery/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json"),
  ROUTER: artifact("@pancakeswap/v3-periphery/artifacts/contracts/SwapRouter.sol/SwapRouter.json"),
  CHEF: artifact("@pancakeswap/masterchef-v3/artifacts/contracts/MasterChefV3.sol/MasterChefV3.json"),
  FEE: 2500,
  TICK_SPACING: 50,
  // Reward growth a second for the stand-in LM pool: a position earns liquidity / 2^20 CAKE
  // base units a second.
  GROWTH_PER_SECOND_X128: 1n << 108n,
};

const FEE = 3000;
const TICK_SPACING = 60;
const SUPPLY = 10n ** 30n;
const MAX_UINT = (1n << 256n) - 1n;

function options(args) {
  const out = {};
  for (let i = 0; i < args.length; i += 2) {
    if (!args[i].startsWith("--") || args[i + 1] === undefined) throw new Error(`bad argument ${args[i]}`);
    out[args[i].slice(2)] = args[i + 1];
  }
  return out;
}

const json = (value) => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v));
// Where a command's one JSON answer goes: stdout, or the answer of a served command.
let answer = (value) => console.log(json(value));
const print = (value) => answer(value);

function isqrt(n) {
  if (n < 2n) return n;
  let x = n, y = (x + 1n) / 2n;
  while (y < x) { x = y; y = (x + n / x) / 2n; }
  return x;
}

let anvil; // stopped when a command fails, so that no chain outlives its deployment

/** Starts anvil on a free loopback port (its genesis at unix time `since`, where given, so that
 * a test can place blocks at chosen past times; its chain id `chainId`, where given);
 * resolves with the child and its URL. */
function startAnvil(since, chainId) {
  const bin = join(here, "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
  const args = ["--host", "127.0.0.1", "--port", "0", ...(since ? ["--timestamp", since] : []),
    ...(chainId ? ["--chain-id", chainId] : [])];
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "inherit"] });
  anvil = child;
  return new Promise((resolve, reject) => {
    let seen = "";
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`anvil exited with ${code}`)));
    child.stdout.on("data", (chunk) => {
      seen += chunk;
      const m = seen.match(/Listening on ([0-9.]+:\d+)/);
      if (m) {
        child.stdout.removeAllListeners("data");
        child.stdout.resume();
        resolve({ child, rpc: `http://${m[1]}` });
      }
    });
  });
}

async function deploy(signer, { abi, bytecode }, ...args) {
  const contract = await new ethers.ContractFactory(abi, bytecode, signer).deploy(...args);
  await mined(contract.deploymentTransaction());
  return contract;
}

// How long a transaction may take to be mined before the command fails (anvil automines at
// once: anything near this is a stuck chain).
const RECEIPT_DEADLINE_MS = 30_000;

// Sends a transaction and waits until its block is mined (anvil answers before that), polling
// eth_getTransactionReceipt with a deadline: ethers' tx.wait() can miss the one block that
// anvil's automine makes for it and then wait forever. A reverted transaction fails here.
// Gas for every transaction but deployments. ethers estimates at the latest block; the
// transaction then runs in a new block one second later, where a Uniswap pool also writes an
// oracle observation (a fresh storage slot): the estimate then falls short, and the call
// reverts out of gas inside the pool. A fixed, ample limit never does.
const GAS = { gasLimit: 8_000_000n };

async function mined(txPromise) {
  const tx = await txPromise;
  const deadline = Date.now() + RECEIPT_DEADLINE_MS;
  for (;;) {
    const receipt = await tx.provider.getTransactionReceipt(tx.hash);
    if (receipt) {
      if (receipt.status !== 1) throw new Error(`transaction ${tx.hash} reverted (block ${receipt.blockNumber}, gas ${receipt.gasUsed} of ${tx.gasLimit}, nonce ${tx.nonce})`);
      return receipt;
    }
    if (Date.now() > deadline) throw new Error(`no receipt for ${tx.hash} within ${RECEIPT_DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// The stand-ins of contracts/PancakeStandIns.sol, compiled by solc-js (pinned in package.json).
async function standIns() {
  const { default: solc } = await import("solc");
  const source = readFileSync(join(here, "contracts/PancakeStandIns.sol"), "utf8");
  const input = {
    language: "Solidity",
    sources: { "PancakeStandIns.sol": { content: source } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const built = output.contracts["PancakeStandIns.sol"];
  const of = (name) => ({ abi: built[name].abi, bytecode: "0x" + built[name].evm.bytecode.object });
  return { poolDeployer: of("DevnetPoolDeployer"), lmPoolDeployer: of("DevnetLmPoolDeployer") };
}

// PancakeSwap v3 beside Uniswap on the same chain and tokens: its factory (on our pool
// deployer, which deploys the npm pool bytecode: pool addresses follow the mainnet init-code
// hash), position manager and router, a USDC/WETH pool at the same price with wide liquidity,
// and MasterChefV3 farming that pool with CAKE (a token of the devnet's), the stand-in LM pool
// setting the reward rate; and a CAKE/USDC pool that prices CAKE.
async function deployPancake(signer, provider, owner, usdc, weth, token0, token1, sqrtPriceX96) {
  const built = await standIns();
  const poolDeployer = await deploy(signer, built.poolDeployer);
  const factory = await deploy(signer, PANCAKE.FACTORY, await poolDeployer.getAddress());
  await mined(poolDeployer.setFactoryAddress(await factory.getAddress(), GAS));
  await mined(poolDeployer.setPoolCode(PANCAKE.POOL.bytecode, { gasLimit: 25_000_000n }));
  const deployer = await poolDeployer.getAddress();
  const wethAddress = await weth.getAddress();
  const manager = await deploy(signer, PANCAKE.MANAGER, deployer, await factory.getAddress(), wethAddress, owner);
  const router = await deploy(signer, PANCAKE.ROUTER, deployer, await factory.getAddress(), wethAddress);
  const cake = await deploy(signer, ERC20, "PancakeSwap Token (devnet)", "CAKE", SUPPLY, owner);
  const chef = await deploy(signer, PANCAKE.CHEF, await cake.getAddress(), await manager.getAddress(), wethAddress);
  const lmDeployer = await deploy(signer, built.lmPoolDeployer, await factory.getAddress(), PANCAKE.GROWTH_PER_SECOND_X128);
  await mined(factory.setLmPoolDeployer(await lmDeployer.getAddress(), GAS));
  await mined(chef.setLMPoolDeployer(await lmDeployer.getAddress(), GAS));
  await mined(manager.createAndInitializePoolIfNecessary(token0, token1, PANCAKE.FEE, sqrtPriceX96, GAS));
  const pool = await factory.getPool(token0, token1, PANCAKE.FEE);
  await mined(chef.add(1, pool, false, GAS));
  // What harvests pay out: MasterChefV3 pays CAKE from its balance.
  await mined(cake.transfer(await chef.getAddress(), SUPPLY / 2n, GAS));
  for (const token of [usdc, weth]) {
    await mined(token.approve(await manager.getAddress(), MAX_UINT, GAS));
    await mined(token.approve(await router.getAddress(), MAX_UINT, GAS));
  }
  const tick = Number((await new ethers.Contract(pool, PANCAKE.POOL.abi, provider).slot0()).tick);
  const around = (t) => Math.floor(t / PANCAKE.TICK_SPACING) * PANCAKE.TICK_SPACING;
  const [wideLower, wideUpper] = [around(tick - 20000), around(tick + 20000)];
  await mined(manager.mint({
    token0, token1, fee: PANCAKE.FEE,
    tickLower: wideLower, tickUpper: wideUpper,
    amount0Desired: 10n ** 24n, amount1Desired: 10n ** 24n, amount0Min: 0, amount1Min: 0,
    recipient: owner, deadline: 2n ** 40n,
  }, GAS));
  // CAKE/USDC at 2 USDC a CAKE, wide: what prices the farm's rewards in USD.
  const [cakeAddress, usdcAddress] = [await cake.getAddress(), await usdc.getAddress()];
  const cakeIsToken0 = BigInt(cakeAddress) < BigInt(usdcAddress);
  const [cake0, cake1] = cakeIsToken0 ? [cakeAddress, usdcAddress] : [usdcAddress, cakeAddress];
  const cakeSqrtPrice = cakeIsToken0 ? isqrt(2n << 192n) : isqrt((1n << 192n) / 2n);
  await mined(manager.createAndInitializePoolIfNecessary(cake0, cake1, PANCAKE.FEE, cakeSqrtPrice, GAS));
  await mined(cake.approve(await manager.getAddress(), MAX_UINT, GAS));
  const cakePool = await factory.getPool(cake0, cake1, PANCAKE.FEE);
  const cakeTick = Number((await new ethers.Contract(cakePool, PANCAKE.POOL.abi, provider).slot0()).tick);
  await mined(manager.mint({
    token0: cake0, token1: cake1, fee: PANCAKE.FEE,
    tickLower: around(cakeTick - 20000), tickUpper: around(cakeTick + 20000),
    amount0Desired: 10n ** 24n, amount1Desired: 10n ** 24n, amount0Min: 0, amount1Min: 0,
    recipient: owner, deadline: 2n ** 40n,
  }, GAS));
  return {
    factory: await factory.getAddress(), poolDeployer: deployer, manager: await manager.getAddress(),
    router: await router.getAddress(), pool, fee: PANCAKE.FEE, tickSpacing: PANCAKE.TICK_SPACING,
    masterChef: await chef.getAddress(), cake: cakeAddress, wideLower, wideUpper,
    cakePool, cakeIsToken0,
  };
}

async function up(opts) {
  // With v4, chain id 1: the Permit2 runtime v4-periphery ships for tests caches a domain
  // separator made elsewhere for chain 31337, and rebuilds it (for its own address) only on
  // another chain: signed Permit2 batches verify there as on mainnet.
  const { child, rpc } = await startAnvil(opts.since, opts.v4 === "true" ? "1" : undefined);
  const stop = () => { child.kill("SIGTERM"); process.exit(0); };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  const provider = new ethers.JsonRpcProvider(rpc, undefined, { staticNetwork: true, pollingInterval: 50 });
  const signer = await provider.getSigner(0);
  const owner = await signer.getAddress();
  const usdc = await deploy(signer, ERC20, "USD Coin (devnet)", "USDC", SUPPLY, owner);
  const weth = await deploy(signer, ERC20, "Wrapped Ether (devnet)", "WETH", SUPPLY, owner);
  const factory = await deploy(signer, FACTORY);
  // The periphery's WETH9 argument is only used for ETH payments, which the devnet never makes.
  const manager = await deploy(signer, MANAGER, await factory.getAddress(), await weth.getAddress(), owner);
  const router = await deploy(signer, ROUTER, await factory.getAddress(), await weth.getAddress());
  // No v2 factory here (0): the zap only swaps on v3 pools.
  const router02 = await deploy(signer, ROUTER02, ethers.ZeroAddress, await factory.getAddress(),
    await manager.getAddress(), await weth.getAddress());
  const quoter = await deploy(signer, QUOTER_V2, await factory.getAddress(), await weth.getAddress());
  const [usdcAddress, wethAddress] = [await usdc.getAddress(), await weth.getAddress()];
  const usdcIsToken0 = BigInt(usdcAddress) < BigInt(wethAddress);
  const [token0, token1] = usdcIsToken0 ? [usdcAddress, wethAddress] : [wethAddress, usdcAddress];
  // Both tokens have 18 decimals: the raw price is token1 per token0.
  const price = BigInt(opts.price ?? "3000");
  const sqrtPriceX96 = usdcIsToken0 ? isqrt((1n << 192n) / price) : isqrt(price << 192n);
  await mined(manager.createAndInitializePoolIfNecessary(token0, token1, FEE, sqrtPriceX96, GAS));
  const pool = await factory.getPool(token0, token1, FEE);
  for (const token of [usdc, weth]) {
    await mined(token.approve(await manager.getAddress(), MAX_UINT, GAS));
    await mined(token.approve(await router.getAddress(), MAX_UINT, GAS));
  }
  // Wide liquidity around the price, from the deployer.
  const tick = Number((await new ethers.Contract(pool, POOL.abi, provider).slot0()).tick);
  const around = (t) => Math.floor(t / TICK_SPACING) * TICK_SPACING;
  const [wideLower, wideUpper] = [around(tick - 20000), around(tick + 20000)];
  await mined(manager.mint({
    token0, token1, fee: FEE,
    tickLower: wideLower, tickUpper: wideUpper,
    amount0Desired: 10n ** 24n, amount1Desired: 10n ** 24n, amount0Min: 0, amount1Min: 0,
    recipient: owner, deadline: 2n ** 40n,
  }, GAS));
  const token = (symbol, address) => ({ symbol, address, decimals: 18, priceUsd: symbol === "USDC" ? "1" : String(price) });
  const poolRecord = (protocol, address, feeTier, tickSpacing) => ({
    chain: "ethereum", protocol, pool: address, feeTier, tickSpacing,
    token0: token(usdcIsToken0 ? "USDC" : "WETH", token0),
    token1: token(usdcIsToken0 ? "WETH" : "USDC", token1),
    base: usdcIsToken0 ? "token1" : "token0",
    currentPrice: String(price),
  });
  const chainId = Number(await provider.send("eth_chainId", []));
  const catalog = {
    asOf: new Date().toISOString(),
    note: "devnet pool deployed by devnet/devnet.mjs",
    pools: [poolRecord("uniswap-v3", pool, FEE, TICK_SPACING)],
    deployments: [{
      chain: "ethereum", protocol: "uniswap-v3", chainId,
      factory: await factory.getAddress(), positionManager: await manager.getAddress(),
      swapRouter: await router02.getAddress(), quoter: await quoter.getAddress(),
    }],
  };
  const state = {
    rpc, pool, token0, token1, usdc: usdcAddress, weth: wethAddress, fee: FEE,
    manager: await manager.getAddress(), router: await router.getAddress(), factory: await factory.getAddress(),
    router02: await router02.getAddress(), quoter: await quoter.getAddress(),
    owner, wideLower, wideUpper,
  };
  if (opts.pancake === "true") {
    const pancake = await deployPancake(signer, provider, owner, usdc, weth, token0, token1, sqrtPriceX96);
    state.pancake = pancake;
    catalog.pools.push(poolRecord("pancakeswap-v3", pancake.pool, pancake.fee, pancake.tickSpacing));
    const cakeRecord = { symbol: "CAKE", address: pancake.cake, decimals: 18, priceUsd: "2" };
    const usdcRecord = { symbol: "USDC", address: usdcAddress, decimals: 18, priceUsd: "1" };
    const [record0, record1] = pancake.cakeIsToken0 ? [cakeRecord, usdcRecord] : [usdcRecord, cakeRecord];
    catalog.pools.push({
      chain: "ethereum", protocol: "pancakeswap-v3", pool: pancake.cakePool, feeTier: pancake.fee,
      tickSpacing: pancake.tickSpacing, token0: record0, token1: record1,
      base: pancake.cakeIsToken0 ? "token0" : "token1", currentPrice: "2",
    });
    catalog.deployments.push({
      chain: "ethereum", protocol: "pancakeswap-v3", chainId,
      factory: pancake.factory, positionManager: pancake.manager, staking: pancake.masterChef,
    });
  }
  if (opts.v4 === "true") {
    const v4 = await deployV4({ here, provider, signer, owner, usdc: usdcAddress, weth: wethAddress, price, deploy, mined });
    state.v4 = v4;
    catalog.deployments.push({
      chain: "ethereum", protocol: "uniswap-v4", chainId, positionManager: v4.positionManager,
      poolManager: v4.poolManager, stateView: v4.stateView, wrappedNative: wethAddress,
      firstBlock: v4.firstBlock,
    });
    // Both pools are supported ones (synced every time); ETH is priced as WETH.
    const eth = { symbol: "ETH", address: v4.pools.eth.currency0, decimals: 18, priceUsd: String(price) };
    const usdcToken = token("USDC", usdcAddress);
    catalog.pools.push({
      chain: "ethereum", protocol: "uniswap-v4", pool: v4.pools.eth.id, feeTier: v4.pools.eth.fee,
      tickSpacing: v4.pools.eth.tickSpacing, token0: eth, token1: usdcToken, base: "token0",
      currentPrice: String(price),
    });
    const erc20 = poolRecord("uniswap-v4", v4.pools.erc20.id, v4.pools.erc20.fee, v4.pools.erc20.tickSpacing);
    catalog.pools.push(erc20);
  }
  if (opts["catalog-out"]) writeFileSync(opts["catalog-out"], JSON.stringify(catalog, null, 2));
  if (opts["state-out"]) writeFileSync(opts["state-out"], JSON.stringify(state, null, 2));
  print(state);
  if (opts.serve === "true") serve();
  await new Promise(() => {});
}

// `up --serve true`: after the state line, every line on stdin is one command,
// {"command": NAME, "args": ["--option", "value", ...]}, answered by one line on stdout,
// {"ok": ANSWER} or {"error": MESSAGE}, in order: the tests' commands run in this process instead
// of a new node each (starting one costs about as much CPU as most commands). A failed command
// fails alone; the chain goes on.
function serve() {
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    queue = queue.then(async () => {
      let reply;
      try {
        const { command, args } = JSON.parse(line);
        if (!commands[command] || command === "up") throw new Error(`no command ${command}`);
        let out = null;
        answer = (value) => { out = value; };
        await commands[command](options(args));
        reply = { ok: out };
      } catch (error) {
        reply = { error: error.shortMessage ?? error.message };
      } finally {
        answer = (value) => console.log(json(value));
      }
      process.stdout.write(json(reply) + "\n");
    });
  });
}

// The deployment's state; `--protocol pancakeswap-v3` puts PancakeSwap's manager, router, pool
// and fee where the commands read Uniswap's.
async function connect(opts) {
  const deployed = JSON.parse(readFileSync(opts.state, "utf8"));
  const pancake = opts.protocol === "pancakeswap-v3";
  const state = pancake ? { ...deployed, ...deployed.pancake, poolAbi: PANCAKE.POOL.abi } : { ...deployed, poolAbi: POOL.abi };
  const provider = new ethers.JsonRpcProvider(opts.rpc ?? state.rpc, undefined, { staticNetwork: true, pollingInterval: 50 });
  const signer = await provider.getSigner(0);
  return { state, provider, signer };
}

async function readPool(provider, address, blockTag, ticks = [], abi = POOL.abi) {
  const pool = new ethers.Contract(address, abi, provider);
  const [slot0, liquidity, g0, g1, ...outside] = await Promise.all([
    pool.slot0({ blockTag }), pool.liquidity({ blockTag }),
    pool.feeGrowthGlobal0X128({ blockTag }), pool.feeGrowthGlobal1X128({ blockTag }),
    ...ticks.map((t) => pool.ticks(t, { blockTag })),
  ]);
  return {
    block: blockTag, sqrtPriceX96: slot0.sqrtPriceX96, tick: Number(slot0.tick), liquidity,
    feeGrowthGlobal0X128: g0, feeGrowthGlobal1X128: g1,
    ticks: ticks.map((tick, i) => ({
      tick, initialized: outside[i].initialized,
      feeGrowthOutside0X128: outside[i].feeGrowthOutside0X128,
      feeGrowthOutside1X128: outside[i].feeGrowthOutside1X128,
    })),
  };
}

// `--token T --fee F` swaps on a pool of `new-pool`'s (T against WETH): `--sell token|weth`.
async function swap(opts) {
  const { state, provider, signer } = await connect(opts);
  const router = new ethers.Contract(state.router, ROUTER.abi, signer);
  let [tokenIn, tokenOut] = opts.sell === "usdc" ? [state.usdc, state.weth] : [state.weth, state.usdc];
  if (opts.token) [tokenIn, tokenOut] = opts.sell === "token" ? [opts.token, state.weth] : [state.weth, opts.token];
  const fee = Number(opts.fee ?? state.fee);
  const receipt = await mined(router.exactInputSingle({
    tokenIn, tokenOut, fee, recipient: state.owner, deadline: 2n ** 40n,
    amountIn: ethers.parseUnits(opts.amount, 18), amountOutMinimum: 0, sqrtPriceLimitX96: 0,
  }, GAS));
  const pool = opts.token ? await new ethers.Contract(state.factory, FACTORY.abi, provider).getPool(tokenIn, tokenOut, fee) : state.pool;
  print(await readPool(provider, pool, receipt.blockNumber, [], state.poolAbi));
}

// Mints a position; --account mints from that account (funded and approving the manager),
// else the deployer pays.
async function mint(opts) {
  const { state, signer, provider } = await connect(opts);
  const from = opts.account ? await provider.getSigner(opts.account) : signer;
  const manager = new ethers.Contract(state.manager, MANAGER.abi, from);
  const params = {
    token0: opts.token0 ?? state.token0, token1: opts.token1 ?? state.token1, fee: Number(opts.fee ?? state.fee),
    tickLower: Number(opts.lower), tickUpper: Number(opts.upper),
    amount0Desired: BigInt(opts.amount0), amount1Desired: BigInt(opts.amount1),
    amount0Min: 0, amount1Min: 0, recipient: opts.recipient ?? opts.account ?? state.owner, deadline: 2n ** 40n,
  };
  const quoted = await manager.mint.staticCall(params);
  const receipt = await mined(manager.mint(params, GAS));
  print({
    block: receipt.blockNumber, tokenId: quoted.tokenId, liquidity: quoted.liquidity,
    amount0: quoted.amount0, amount1: quoted.amount1,
  });
}

// What `collect` would pay the owner of a position-manager position now: its fees earned.
async function collectQuote(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, provider);
  const max = 2n ** 128n - 1n;
  const [amount0, amount1] = await manager.collect.staticCall(
    { tokenId: BigInt(opts["token-id"]), recipient: state.owner, amount0Max: max, amount1Max: max },
    { from: state.owner },
  );
  print({ amount0, amount1 });
}

async function burnQuote(opts) {
  const { state, provider } = await connect(opts);
  const pool = new ethers.Contract(state.pool, state.poolAbi, provider);
  const [amount0, amount1] = await pool.burn.staticCall(
    Number(opts.lower), Number(opts.upper), BigInt(opts.liquidity), { from: state.manager },
  );
  print({ amount0, amount1 });
}

async function newPool(opts) {
  const { state, signer } = await connect(opts);
  const owner = await signer.getAddress();
  const token = opts.token
    ? new ethers.Contract(opts.token, ERC20.abi, signer)
    : await deploy(signer, ERC20, `${opts.symbol} token`, opts.symbol, SUPPLY, owner);
  const address = await token.getAddress();
  let other = state.weth;
  if (opts.with) {
    const second = await deploy(signer, ERC20, `${opts.with} token`, opts.with, SUPPLY, owner);
    other = await second.getAddress();
    await mined(second.approve(state.manager, MAX_UINT, GAS));
  }
  const fee = Number(opts.fee ?? 500);
  const [token0, token1] = BigInt(address) < BigInt(other) ? [address, other] : [other, address];
  const manager = new ethers.Contract(state.manager, MANAGER.abi, signer);
  // N of the other token (both have 18 decimals) per token: token1 per token0 is N or 1/N.
  const price = BigInt(opts.price ?? 1);
  const sqrtPriceX96 = token0 === address ? isqrt(price << 192n) : isqrt((1n << 192n) / price);
  await mined(manager.createAndInitializePoolIfNecessary(token0, token1, fee, sqrtPriceX96, GAS));
  await mined(token.approve(state.manager, MAX_UINT, GAS));
  await mined(token.approve(state.router, MAX_UINT, GAS));
  const factory = new ethers.Contract(state.factory, FACTORY.abi, signer);
  const pool = await factory.getPool(token0, token1, fee);
  const tick = Number((await new ethers.Contract(pool, POOL.abi, signer).slot0()).tick);
  print({ token: address, token0, token1, fee, pool, tick });
}

async function account(opts) {
  const { provider } = await connect(opts);
  const accounts = await provider.send("eth_accounts", []);
  print({ address: ethers.getAddress(accounts[Number(opts.index)]) });
}

async function sign(opts) {
  const { provider } = await connect(opts);
  const signature = await provider.send("personal_sign", [ethers.hexlify(ethers.toUtf8Bytes(opts.message)), opts.account]);
  print({ signature });
}

async function withdraw(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, await provider.getSigner(opts.account));
  const held = (await manager.positions(BigInt(opts["token-id"]))).liquidity;
  const liquidity = opts.liquidity === undefined ? held : BigInt(opts.liquidity);
  const receipt = await mined(manager.decreaseLiquidity({
    tokenId: BigInt(opts["token-id"]), liquidity, amount0Min: 0, amount1Min: 0, deadline: 2n ** 40n,
  }, GAS));
  print({ block: receipt.blockNumber, liquidity });
}

// The account adds to its position: at most --amount0/--amount1 base units.
async function increase(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, await provider.getSigner(opts.account));
  const params = {
    tokenId: BigInt(opts["token-id"]), amount0Desired: BigInt(opts.amount0), amount1Desired: BigInt(opts.amount1),
    amount0Min: 0, amount1Min: 0, deadline: 2n ** 40n,
  };
  const [liquidity, amount0, amount1] = await manager.increaseLiquidity.staticCall(params, { from: opts.account });
  const receipt = await mined(manager.increaseLiquidity(params, GAS));
  print({ block: receipt.blockNumber, liquidity, amount0, amount1 });
}

async function collect(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, await provider.getSigner(opts.account));
  const max = (1n << 128n) - 1n;
  const params = {
    tokenId: BigInt(opts["token-id"]), recipient: opts.account,
    amount0Max: opts.amount0 === undefined ? max : BigInt(opts.amount0),
    amount1Max: opts.amount1 === undefined ? max : BigInt(opts.amount1),
  };
  const [amount0, amount1] = await manager.collect.staticCall(params, { from: opts.account });
  const receipt = await mined(manager.collect(params, GAS));
  print({ block: receipt.blockNumber, amount0, amount1 });
}

// The account collects at most 1 base unit of token0, --count times (a bot collecting every
// hour, in a hurry): one Collect event each.
async function churn(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, await provider.getSigner(opts.account));
  const params = { tokenId: BigInt(opts["token-id"]), recipient: opts.account, amount0Max: 1n, amount1Max: 0n };
  let receipt;
  for (let i = 0; i < Number(opts.count); i++) receipt = await mined(manager.collect(params, GAS));
  print({ block: receipt?.blockNumber ?? null, count: Number(opts.count) });
}

async function transfer(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, await provider.getSigner(opts.account));
  const receipt = await mined(manager.transferFrom(opts.account, opts.to, BigInt(opts["token-id"]), GAS));
  print({ block: receipt.blockNumber });
}

async function positionQuote(opts) {
  const { state, provider } = await connect(opts);
  const manager = new ethers.Contract(state.manager, MANAGER.abi, provider);
  const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
  const tokenId = BigInt(opts["token-id"]);
  const position = await manager.positions(tokenId, { blockTag });
  const owner = await manager.ownerOf(tokenId, { blockTag });
  const max = 2n ** 128n - 1n;
  const [decrease0, decrease1] = position.liquidity === 0n ? [0n, 0n] : await manager.decreaseLiquidity.staticCall(
    { tokenId, liquidity: position.liquidity, amount0Min: 0, amount1Min: 0, deadline: 2n ** 40n },
    { from: owner, blockTag },
  );
  const [collect0, collect1] = await manager.collect.staticCall(
    { tokenId, recipient: owner, amount0Max: max, amount1Max: max }, { from: owner, blockTag },
  );
  print({
    block: blockTag, owner, token0: position.token0, token1: position.token1, fee: position.fee,
    tickLower: position.tickLower, tickUpper: position.tickUpper, liquidity: position.liquidity,
    amount0: decrease0, amount1: decrease1, fees0: collect0, fees1: collect1,
  });
}

async function poolCommand(opts) {
  const { state, provider } = await connect(opts);
  const block = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
  const ticks = opts.ticks ? opts.ticks.split(",").map(Number) : [];
  print(await readPool(provider, opts.address ?? state.pool, block, ticks, state.poolAbi));
}

// Gives an account `amount` whole tokens of both of the pool's tokens (from the deployer).
async function fund(opts) {
  const { state, signer } = await connect(opts);
  for (const address of [state.usdc, state.weth]) {
    const token = new ethers.Contract(address, ERC20.abi, signer);
    await mined(token.transfer(opts.account, ethers.parseUnits(opts.amount ?? "1000000", 18), GAS));
  }
  print({ funded: opts.account });
}

// The account approves `spender` (default the position manager) for `amount` base units of a
// token (usdc, weth or an address).
async function approve(opts) {
  const { state, provider } = await connect(opts);
  const address = state[opts.token] ?? opts.token;
  const token = new ethers.Contract(address, ERC20.abi, await provider.getSigner(opts.account));
  const receipt = await mined(token.approve(opts.spender ?? state.manager, BigInt(opts.amount), GAS));
  print({ block: receipt.blockNumber });
}

// A token's allowance from an account to the position manager, and its balance.
async function allowance(opts) {
  const { state, provider } = await connect(opts);
  const token = new ethers.Contract(state[opts.token] ?? opts.token, ERC20.abi, provider);
  print({
    allowance: await token.allowance(opts.account, state.manager),
    balance: await token.balanceOf(opts.account),
  });
}

// The position manager's events in a transaction's receipt, decoded by ethers from the
// contract's ABI: what the chain says a mint or a withdraw did.
async function events(opts) {
  const { state, provider } = await connect(opts);
  const receipt = await provider.getTransactionReceipt(opts.hash);
  const manager = new ethers.Interface(MANAGER.abi);
  const decoded = receipt.logs
    .filter((log) => log.address.toLowerCase() === state.manager.toLowerCase())
    .map((log) => manager.parseLog(log))
    .filter(Boolean)
    .map((e) => ({ name: e.name, args: Object.fromEntries(e.fragment.inputs.map((input, i) => [input.name, e.args[i]])) }));
  const block = await provider.getBlock(receipt.blockNumber);
  print({ status: receipt.status, block: receipt.blockNumber, timestamp: block.timestamp, events: decoded });
}

// MasterChefV3 (`up --pancake true`), as the account that staked: stake a position (its
// safeTransferFrom to the chef), unstake it (withdraw: the rewards harvested to it), harvest,
// collect and decrease through the chef; what the chef says of a position at a block.
async function chef(opts, account = true) {
  const { state, provider } = await connect({ ...opts, protocol: "pancakeswap-v3" });
  const runner = account ? await provider.getSigner(opts.account) : provider;
  return {
    state, provider, tokenId: BigInt(opts["token-id"]),
    chef: new ethers.Contract(state.masterChef, PANCAKE.CHEF.abi, runner),
    manager: new ethers.Contract(state.manager, PANCAKE.MANAGER.abi, runner),
  };
}

async function stake(opts) {
  const { state, manager, tokenId } = await chef(opts);
  const receipt = await mined(manager["safeTransferFrom(address,address,uint256)"](opts.account, state.masterChef, tokenId, GAS));
  print({ block: receipt.blockNumber, hash: receipt.hash });
}

// What the chef paid in a transaction: its Harvest logs' rewards (a call made before it is
// mined would answer at another block's time).
function paid(masterChef, receipt) {
  return receipt.logs
    .map((log) => { try { return masterChef.interface.parseLog(log); } catch { return null; } })
    .filter((parsed) => parsed?.name === "Harvest")
    .reduce((sum, parsed) => sum + parsed.args.reward, 0n);
}

// `--to` sends the NFT (and the rewards) to another address than the staker's.
async function unstake(opts) {
  const { chef: masterChef, tokenId } = await chef(opts);
  const to = opts.to ?? opts.account;
  const receipt = await mined(masterChef.withdraw(tokenId, to, GAS));
  print({ block: receipt.blockNumber, hash: receipt.hash, reward: paid(masterChef, receipt) });
}

async function harvest(opts) {
  const { chef: masterChef, tokenId } = await chef(opts);
  const to = opts.to ?? opts.account;
  const receipt = await mined(masterChef.harvest(tokenId, to, GAS));
  print({ block: receipt.blockNumber, hash: receipt.hash, reward: paid(masterChef, receipt) });
}

async function chefCollect(opts) {
  const { chef: masterChef, tokenId } = await chef(opts);
  const max = (1n << 128n) - 1n;
  const params = { tokenId, recipient: opts.account, amount0Max: max, amount1Max: max };
  const [amount0, amount1] = await masterChef.collect.staticCall(params, { from: opts.account });
  const receipt = await mined(masterChef.collect(params, GAS));
  print({ block: receipt.blockNumber, amount0, amount1 });
}

async function chefDecrease(opts) {
  const { chef: masterChef, tokenId } = await chef(opts);
  const params = { tokenId, liquidity: BigInt(opts.liquidity), amount0Min: 0, amount1Min: 0, deadline: 2n ** 40n };
  const [amount0, amount1] = await masterChef.decreaseLiquidity.staticCall(params, { from: opts.account });
  const receipt = await mined(masterChef.decreaseLiquidity(params, GAS));
  print({ block: receipt.blockNumber, amount0, amount1 });
}

async function stakingQuote(opts) {
  const { state, provider, chef: masterChef, manager, tokenId } = await chef(opts, false);
  const blockTag = opts.block === undefined ? await provider.getBlockNumber() : Number(opts.block);
  const info = await masterChef.userPositionInfos(tokenId, { blockTag });
  const owner = await manager.ownerOf(tokenId, { blockTag });
  const cake = new ethers.Contract(state.cake, ERC20.abi, provider);
  print({
    block: blockTag, owner, user: info.user, liquidity: info.liquidity, pid: info.pid,
    pendingCake: await masterChef.pendingCake(tokenId, { blockTag }),
    cakeBalanceOfUser: info.user === ethers.ZeroAddress ? 0n : await cake.balanceOf(info.user, { blockTag }),
  });
}

const [command, ...rest] = process.argv.slice(2);
const commands = {
  up, swap, mint, pool: poolCommand, "burn-quote": burnQuote, "collect-quote": collectQuote,
  "new-pool": newPool, account, sign, withdraw, increase, collect, churn, transfer, "position-quote": positionQuote,
  fund, approve, allowance, events, stake, unstake, harvest, "chef-collect": chefCollect,
  "chef-decrease": chefDecrease, "staking-quote": stakingQuote,
  ...v4Commands({ connect, mined, print: (value) => print(value) }),
  ...safeCommands({ here, connect, mined, deploy, print: (value) => print(value) }),
  ...slipstreamCommands({ here, connect, mined, deploy, print: (value) => print(value), erc20: ERC20 }),
};
if (!commands[command]) {
  console.error(`usage: devnet.mjs ${Object.keys(commands).join("|")} [--option value]...`);
  process.exit(2);
}
commands[command](options(rest)).catch((error) => {
  console.error(`devnet: ${error.shortMessage ?? error.message}`);
  anvil?.kill("SIGTERM");
  process.exit(1);
});
