// The browser's injected EIP-1193 wallet (window.ethereum): linking it by signature, and sending
// the transactions the API builds, in order, exactly as given. The page never sees a key.

export function available() {
  return typeof window.ethereum?.request === "function";
}

function hexUtf8(text) {
  return "0x" + Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Links the wallet's first account on `chain`: the API's challenge, `personal_sign`, the link. */
export async function link(api, chain) {
  const [address] = await window.ethereum.request({ method: "eth_requestAccounts" });
  const { message } = await api.post("/wallets/challenge", { chain, address });
  const signature = await window.ethereum.request({
    method: "personal_sign", params: [hexUtf8(message), address],
  });
  return api.post("/wallets", { chain, address, message, signature });
}

async function receipt(hash) {
  for (let i = 0; i < 600; i++) {
    const found = await window.ethereum.request({ method: "eth_getTransactionReceipt", params: [hash] });
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`no receipt for ${hash}`);
}

/** Sends each transaction in order, waiting for each to be mined; `progress(kind, hash)` after
 * each. Answers each one's kind and hash, in order. */
export async function sendAll(transactions, progress) {
  const sent = [];
  for (const t of transactions) {
    const hash = await window.ethereum.request({
      method: "eth_sendTransaction",
      // The gas limit the API's simulation gave (its estimate plus a margin), where it gave one.
      params: [{
        from: t.from, to: t.to, data: t.data, value: "0x" + BigInt(t.value).toString(16),
        ...(t.gas ? { gas: "0x" + BigInt(t.gas).toString(16) } : {}),
      }],
    });
    const mined = await receipt(hash);
    progress(t.kind, hash, mined.status);
    if (mined.status !== "0x1" && t.kind === "approve") throw new Error(`the ${t.kind} reverted (${hash})`);
    sent.push({ kind: t.kind, hash });
  }
  return sent;
}
