// Safe contract wallets on the devnet, for tests only: the real Safe 1.4.1 contracts from npm
// (`@safe-global/safe-contracts`, LGPL-3.0: deployed on a throwaway chain by the tests, never a
// dependency of the service): the singleton, its proxy factory, the compatibility fallback
// handler (ERC-1271 for the Safe) and MultiSendCallOnly, deployed once per served devnet at the
// first Safe command. Commands (each on the deployment's state file):
//   safe-create --owners A,B,... --threshold N [--salt S] [--deploy true|false]
//       a Safe of those owners (deployed through the factory, or only its address computed);
//       prints its address, the factory and the factory call that deploys it (ERC-6492's)
//   safe-sign --safe S --message TEXT --signers A,B,... [--chain-id N] [--wrap true]
//       the owners' signatures of the Safe message of TEXT's EIP-191 hash (what a Safe app asks
//       its owners to sign for a personal_sign request), concatenated in the owners' order;
//       --chain-id signs for another chain; --wrap adds ERC-6492's wrapper for an undeployed Safe
//   safe-exec --safe S --signers A,B,... --calls JSON
//       the Safe runs the calls [{to, value, data}] at once: execTransaction delegating to
//       MultiSendCallOnly, signed by the owners (pre-validated: each owner approves the hash)
//   signature-check-bytecode   solc-js's build of shared/contracts/SignatureCheck.sol

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ethers } from "ethers";

const SUFFIX = "6492".repeat(16);
const GAS = { gasLimit: 8_000_000n };
const coder = ethers.AbiCoder.defaultAbiCoder();

export function commands({ here, connect, mined, deploy, print }) {
  const load = (path) =>
    JSON.parse(readFileSync(join(here, "node_modules/@safe-global/safe-contracts/build/artifacts/contracts", path), "utf8"));
  const SAFE = load("Safe.sol/Safe.json");
  const FACTORY = load("proxies/SafeProxyFactory.sol/SafeProxyFactory.json");
  const HANDLER = load("handler/CompatibilityFallbackHandler.sol/CompatibilityFallbackHandler.json");
  const MULTISEND = load("libraries/MultiSendCallOnly.sol/MultiSendCallOnly.json");
  let contracts; // deployed once per served devnet

  async function safeContracts(signer) {
    if (!contracts) {
      const address = async (artifact) => (await deploy(signer, artifact)).getAddress();
      contracts = {
        singleton: await address(SAFE),
        factory: await address(FACTORY),
        handler: await address(HANDLER),
        multiSend: await address(MULTISEND),
      };
    }
    return contracts;
  }

  const list = (text) => text.split(",").map((a) => ethers.getAddress(a));

  async function signatures(provider, safe, hash, signers, chainId) {
    const domain = { chainId, verifyingContract: safe };
    const types = { SafeMessage: [{ name: "message", type: "bytes" }] };
    const sorted = list(signers).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
    let joined = "0x";
    for (const owner of sorted) {
      const signer = await provider.getSigner(owner);
      joined += (await signer.signTypedData(domain, types, { message: hash })).slice(2);
    }
    return joined;
  }

  return {
    async "safe-create"(opts) {
      const { signer } = await connect(opts);
      const c = await safeContracts(signer);
      const safe = new ethers.Interface(SAFE.abi);
      const initializer = safe.encodeFunctionData("setup", [
        list(opts.owners), BigInt(opts.threshold), ethers.ZeroAddress, "0x", c.handler,
        ethers.ZeroAddress, 0n, ethers.ZeroAddress,
      ]);
      const factory = new ethers.Contract(c.factory, FACTORY.abi, signer);
      const salt = BigInt(opts.salt ?? 0);
      const address = await factory.createProxyWithNonce.staticCall(c.singleton, initializer, salt);
      const factoryCalldata = factory.interface.encodeFunctionData("createProxyWithNonce", [c.singleton, initializer, salt]);
      const deployed = opts.deploy !== "false";
      if (deployed) await mined(factory.createProxyWithNonce(c.singleton, initializer, salt, GAS));
      print({ safe: address, factory: c.factory, factoryCalldata, deployed, multiSend: c.multiSend });
    },
    async "safe-sign"(opts) {
      const { provider } = await connect(opts);
      const chainId = BigInt(opts["chain-id"] ?? (await provider.getNetwork()).chainId);
      const hash = ethers.hashMessage(opts.message);
      let signature = await signatures(provider, ethers.getAddress(opts.safe), hash, opts.signers, chainId);
      if (opts.wrap === "true") {
        const c = contracts;
        if (!c) throw new Error("no Safe was created on this devnet");
        const wrapped = coder.encode(["address", "bytes", "bytes"], [c.factory, opts["factory-calldata"], signature]);
        signature = wrapped + SUFFIX;
      }
      print({ signature, hash });
    },
    async "safe-exec"(opts) {
      const { provider, signer } = await connect(opts);
      const c = await safeContracts(signer);
      const calls = JSON.parse(opts.calls);
      const packed = ethers.concat(calls.map((call) => {
        const data = ethers.getBytes(call.data ?? "0x");
        return ethers.solidityPacked(["uint8", "address", "uint256", "uint256", "bytes"],
          [0, call.to, BigInt(call.value ?? 0), data.length, data]);
      }));
      const multiSend = new ethers.Interface(MULTISEND.abi).encodeFunctionData("multiSend", [packed]);
      const safe = new ethers.Contract(opts.safe, SAFE.abi, signer);
      const nonce = await safe.nonce();
      const args = [c.multiSend, 0n, multiSend, 1, 0n, 0n, 0n, ethers.ZeroAddress, ethers.ZeroAddress];
      const hash = await safe.getTransactionHash(...args, nonce);
      // Each owner approves the hash on chain; their pre-validated signatures (v = 1) follow.
      const owners = list(opts.signers).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      let joined = "0x";
      for (const owner of owners) {
        const as = safe.connect(await provider.getSigner(owner));
        await mined(as.approveHash(hash, GAS));
        joined += coder.encode(["address", "uint256"], [owner, 0n]).slice(2) + "01";
      }
      const receipt = await mined(safe.execTransaction(...args, joined, GAS));
      const failed = receipt.logs.some((l) => l.topics[0] === safe.interface.getEvent("ExecutionFailure").topicHash);
      if (failed) throw new Error("the Safe's transaction failed");
      print({ block: receipt.blockNumber, hash: receipt.hash });
    },
    async "signature-check-bytecode"() {
      const { default: solc } = await import("solc");
      const source = readFileSync(join(here, "../shared/contracts/SignatureCheck.sol"), "utf8");
      const input = {
        language: "Solidity",
        sources: { "SignatureCheck.sol": { content: source } },
        settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["evm.bytecode.object"] } } },
      };
      const output = JSON.parse(solc.compile(JSON.stringify(input)));
      const errors = (output.errors ?? []).filter((e) => e.severity === "error");
      if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
      print({ bytecode: output.contracts["SignatureCheck.sol"].SignatureCheck.evm.bytecode.object });
    },
  };
}
