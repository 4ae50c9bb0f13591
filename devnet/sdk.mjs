// The Uniswap v3 SDK's own answers for the tests to check the API's calldata against (an
// independent computation: the SDK published on npm, not our code). Reads a JSON array of cases
// on stdin, prints a JSON array of answers, one per case, integers as decimal strings.
//
//   {"kind": "mint", "chainId", "token0", "token1", "fee", "sqrtPriceX96", "tick",
//    "tickLower", "tickUpper", "amount0Desired", "amount1Desired", "bps", "recipient", "deadline"}
//     -> for a Position whose mintAmounts are those desired amounts (the amounts the calldata
//        carries): mintAmountsWithSlippage, the liquidity the position manager mints of them,
//        and NonfungiblePositionManager.addCallParameters' calldata
//     with "tokenId": addCallParameters' increaseLiquidity of that token instead of a mint
//   {"kind": "burn", ..., "liquidity", "tokenId", "percent"?}
//     -> burnAmountsWithSlippage (of the share taken out) and removeCallParameters' calldata
//        (`percent` of the liquidity, default 100, everything owed collected to the recipient)
//   {"kind": "collect", "chainId", "token0", "token1", "tokenId", "recipient"}
//     -> collectCallParameters' calldata (everything owed to the recipient)

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { ethers } from "ethers";

const require = createRequire(import.meta.url);
const { Pool, Position, NonfungiblePositionManager } = require("@uniswap/v3-sdk");
const { Token, Percent, CurrencyAmount } = require("@uniswap/sdk-core");
const JSBI = require("jsbi");

function answer(c) {
  const token0 = new Token(c.chainId, ethers.getAddress(c.token0), 18);
  const token1 = new Token(c.chainId, ethers.getAddress(c.token1), 18);
  if (c.kind === "collect") {
    const { calldata } = NonfungiblePositionManager.collectCallParameters({
      tokenId: c.tokenId,
      expectedCurrencyOwed0: CurrencyAmount.fromRawAmount(token0, 0),
      expectedCurrencyOwed1: CurrencyAmount.fromRawAmount(token1, 0),
      recipient: ethers.getAddress(c.recipient),
    });
    return { calldata };
  }
  const pool = new Pool(token0, token1, c.fee, c.sqrtPriceX96, "0", c.tick);
  const position = new Position({ pool, liquidity: c.liquidity ?? "1", tickLower: c.tickLower, tickUpper: c.tickUpper });
  const slippageTolerance = new Percent(c.bps, 10_000);
  const deadline = c.deadline;
  if (c.kind === "mint") {
    // The SDK keeps a position's mint amounts here once computed; the algorithms below read
    // them through the getter, as addCallParameters does.
    position._mintAmounts = { amount0: JSBI.BigInt(c.amount0Desired), amount1: JSBI.BigInt(c.amount1Desired) };
    const desired = position.mintAmounts;
    const minimum = position.mintAmountsWithSlippage(slippageTolerance);
    const minted = Position.fromAmounts({
      pool, tickLower: c.tickLower, tickUpper: c.tickUpper,
      amount0: desired.amount0, amount1: desired.amount1, useFullPrecision: false,
    });
    const { calldata } = NonfungiblePositionManager.addCallParameters(position, c.tokenId
      ? { slippageTolerance, deadline, tokenId: c.tokenId }
      : { slippageTolerance, recipient: ethers.getAddress(c.recipient), deadline });
    return {
      amount0Desired: desired.amount0.toString(), amount1Desired: desired.amount1.toString(),
      amount0Min: minimum.amount0.toString(), amount1Min: minimum.amount1.toString(),
      liquidityMinted: minted.liquidity.toString(), calldata,
    };
  }
  const liquidityPercentage = new Percent(c.percent ?? 100, 100);
  const share = new Position({
    pool, liquidity: liquidityPercentage.multiply(position.liquidity).quotient,
    tickLower: c.tickLower, tickUpper: c.tickUpper,
  });
  const minimum = share.burnAmountsWithSlippage(slippageTolerance);
  const { calldata } = NonfungiblePositionManager.removeCallParameters(position, {
    tokenId: c.tokenId, liquidityPercentage, slippageTolerance, deadline,
    collectOptions: {
      expectedCurrencyOwed0: CurrencyAmount.fromRawAmount(token0, 0),
      expectedCurrencyOwed1: CurrencyAmount.fromRawAmount(token1, 0),
      recipient: ethers.getAddress(c.recipient),
    },
  });
  return { amount0Min: minimum.amount0.toString(), amount1Min: minimum.amount1.toString(), calldata };
}

const cases = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(answer)));
