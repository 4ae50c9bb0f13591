// The page: sign-in from the URL fragment or a pasted token, the portfolio, the positions with
// their range bars and paging, a position's detail and close, and the wallet flows (link, open
// on chain, sign and send, follow until the chain settles it), the alerts (alerts.js).

import { saveSettings, showFeed, showPositionAlerts, showSettings } from "./alerts.js";
import { ApiError, claims, client } from "./api.js";
import { breakdown, rangeBar } from "./charts.js";
import { amount, percent, price, signedUsd, time, usd } from "./format.js";
import { showChanges, showPortfolioChart, showPositionChart } from "./over-time.js";
import * as wallet from "./wallet.js";

const PAGE_SIZE = 10;
const $ = (id) => document.getElementById(id);

const state = { api: null, status: "", source: "", offset: 0, total: 0, pools: [], wallets: [], detail: null, period: "7d" };

// ---- session --------------------------------------------------------------------------------

/** The API's base: `?api=` or `#api=` (a page hosted apart from the API), else this origin. */
function apiBase() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = new URLSearchParams(location.search).get("api") ?? fragment.get("api");
  if (given) sessionStorage.setItem("api", given.replace(/\/$/, ""));
  return sessionStorage.getItem("api") ?? "";
}

/** The token from `#token=…` (never sent to a server by the browser), kept for the session. */
function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  if (token) {
    sessionStorage.setItem("token", token);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("token");
}

function signIn(reason) {
  sessionStorage.removeItem("token");
  state.api = null;
  $("app").hidden = true;
  $("session").hidden = true;
  $("signin").hidden = false;
  $("signin-reason").hidden = !reason;
  $("signin-reason").textContent = reason ?? "";
  $("token").focus();
}

function start(token) {
  const claim = claims(token);
  if (!claim) return signIn("that is not a token (a JWT has three dot-separated parts)");
  state.api = client(apiBase(), token);
  $("sub").textContent = claim.sub ?? "?";
  $("expiry").textContent = claim.exp ? new Date(claim.exp * 1000).toLocaleString() : "—";
  $("session").hidden = false;
  $("signin").hidden = true;
  $("app").hidden = false;
  refresh();
}

/** Shows an API failure: a 401 goes back to signing in, with the API's reason. */
function fail(error) {
  if (error instanceof ApiError && error.status === 401) return signIn(`the API refused the token: ${error.message}`);
  $("error").textContent = error.message;
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
}

async function refresh() {
  try {
    clearError();
    await Promise.all([showPortfolio(), showPositions(), showWallets(), loadPools(), showFeed(state.api),
      showSettings(state.api)]);
  } catch (e) {
    fail(e);
  }
}

// ---- portfolio ------------------------------------------------------------------------------

function figure(list, label, value, field, title) {
  const dt = document.createElement("dt");
  dt.textContent = label;
  const dd = document.createElement("dd");
  dd.textContent = value;
  if (field) dd.dataset.field = field;
  if (title) dd.title = title;
  list.append(dt, dd);
}

async function showPortfolio() {
  // One read pass first; the changes, which read every wallet position's history, after it
  // (the totals never wait for them; a failure leaves them "—").
  const p = await state.api.get("/portfolio");
  const totals = $("totals");
  totals.replaceChildren();
  figure(totals, "Total value", usd(p.totalValueUsd), "totalValueUsd");
  figure(totals, "Total PnL", `${signedUsd(p.totalPnlUsd)} (${percent(p.totalPnlPercent)})`, "totalPnlUsd");
  figure(totals, "Unrealized PnL", signedUsd(p.unrealizedPnlUsd), "unrealizedPnlUsd");
  figure(totals, "Realized PnL", signedUsd(p.realizedPnlUsd), "realizedPnlUsd");
  figure(totals, "Fees earned", usd(p.totalFeesEarnedUsd), "totalFeesEarnedUsd");
  // Staked positions' farm rewards, apart from fees (decision 60): shown where there are some.
  if (Number(p.totalRewardsUsd)) figure(totals, "Farm rewards", usd(p.totalRewardsUsd), "totalRewardsUsd");
  figure(totals, "Impermanent loss", usd(p.totalImpermanentLossUsd), "totalImpermanentLossUsd");
  figure(totals, "Open positions", String(p.positions), "positions");
  const unpriced = p.unpricedPositions ?? 0;
  $("unpriced").hidden = unpriced === 0;
  $("unpriced").textContent = `${unpriced} position(s) hold a token without a USD price: they are not in the USD totals.`;
  const items = (list, key) => (list ?? []).map((x) => ({ label: x[key], valueUsd: x.valueUsd, percentage: x.percentage }));
  // A token is its chain and address: a symbol two assets share is told apart by the chain.
  const assets = items(p.assets, "symbol");
  (p.assets ?? []).forEach((a, i) => {
    if (p.assets.filter((b) => b.symbol === a.symbol).length > 1) assets[i].label = `${a.symbol} · ${a.chain}`;
  });
  $("assets").replaceChildren(breakdown(assets, usd));
  $("chains").replaceChildren(breakdown(items(p.chains, "chain"), usd));
  showChanges($("changes"), undefined);
  state.api.get("/portfolio?include=changes")
    .then((withChanges) => showChanges($("changes"), withChanges.changes))
    .catch(() => {});
  await showPortfolioChart(state.api, $("portfolio-chart"), state.period);
}

for (const button of document.querySelectorAll("#periods button")) {
  button.addEventListener("click", async () => {
    state.period = button.dataset.period;
    for (const b of document.querySelectorAll("#periods button")) b.setAttribute("aria-pressed", String(b === button));
    try {
      await showPortfolioChart(state.api, $("portfolio-chart"), state.period);
    } catch (e) {
      fail(e);
    }
  });
}

// ---- positions ------------------------------------------------------------------------------

function cell(row, content, label) {
  const td = document.createElement("td");
  td.dataset.label = label;
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  row.append(td);
  return td;
}

function tokenLine(token) {
  const span = document.createElement("span");
  span.className = "token";
  span.textContent = `${amount(token.amount)} ${token.symbol}`;
  span.title = `${token.amount} ${token.symbol}`;
  return span;
}

function amounts(p) {
  const box = document.createElement("div");
  box.append(tokenLine(p.tokenA), tokenLine(p.tokenB));
  return box;
}

function feesOf(p) {
  const box = document.createElement("div");
  box.textContent = usd(p.feesEarnedUsd);
  box.title = `${p.tokenA.feesEarned} ${p.tokenA.symbol} + ${p.tokenB.feesEarned} ${p.tokenB.symbol}`;
  return box;
}

function poolName(p) {
  const box = document.createElement("div");
  const strong = document.createElement("strong");
  strong.textContent = `${p.tokenA.symbol}/${p.tokenB.symbol}`;
  const small = document.createElement("span");
  small.className = "muted block";
  small.textContent = `${p.chain} · ${p.protocol} · ${p.source}`;
  box.append(strong, small);
  return box;
}

async function showPositions() {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(state.offset) });
  if (state.status) query.set("status", state.status);
  if (state.source) query.set("source", state.source);
  const page = await state.api.get(`/positions?${query}`);
  state.total = page.total;
  const body = $("position-table").querySelector("tbody");
  body.replaceChildren();
  for (const p of page.data) {
    const row = document.createElement("tr");
    row.dataset.id = p.id;
    cell(row, poolName(p), "Pool");
    cell(row, p.status, "Status").dataset.status = p.status;
    cell(row, amounts(p), "Amounts");
    cell(row, usd(p.valueUsd), "Value").dataset.usd = "valueUsd";
    cell(row, feesOf(p), "Fees");
    cell(row, signedUsd(p.pnlUsd), "PnL").dataset.usd = "pnlUsd";
    cell(row, p.valuationError ? p.valuationError : rangeBar(p), "Range");
    const open = document.createElement("button");
    open.type = "button";
    open.textContent = "Details";
    open.addEventListener("click", () => showDetail(p.id));
    cell(row, open, "");
    body.append(row);
  }
  if (page.data.length === 0) {
    const row = document.createElement("tr");
    cell(row, "No positions here yet.", "").colSpan = 8;
    body.append(row);
  }
  const first = page.total === 0 ? 0 : state.offset + 1;
  $("page-info").textContent = `${first}–${state.offset + page.data.length} of ${page.total}`;
  $("prev").disabled = state.offset === 0;
  $("next").disabled = state.offset + PAGE_SIZE >= page.total;
}

// ---- a position's detail, its transactions and its close -------------------------------------

/** What a transaction's run on the chain said of it: its gas limit and the tokens it moves. */
/** A pool's fee as the list shows it: a Slipstream pool's is its own, dynamic (null until read),
 * named with its tick spacing. */
function poolFee(p) {
  const fee = p.feeTier === null ? "fee not read yet" : `${p.feeTier / 10000}%`;
  return p.protocol === "aerodrome-slipstream" ? `${fee} (dynamic), spacing ${p.tickSpacing}` : fee;
}

function transactionTerms(t, p) {
  const parts = [];
  if (t.gas) parts.push(`gas ${BigInt(t.gas).toLocaleString("en-US")}`);
  const swap = t.expected?.swap;
  if (swap) {
    const [sold, bought] = swap.sell === "tokenA" ? [p.tokenA, p.tokenB] : [p.tokenB, p.tokenA];
    parts.push(`swaps ${swap.amountIn} ${sold.symbol} for ${swap.amountOut} ${bought.symbol} (at least ${swap.amountOutMinimum}; price impact ${swap.priceImpactPercent} %, the price moving ${swap.priceMovePercent} %)`);
  }
  if (t.expected) {
    const moves = `${t.expected.tokenA} ${p.tokenA.symbol} + ${t.expected.tokenB} ${p.tokenB.symbol}`;
    const pays = t.kind === "mint" || t.kind === "increase" || t.kind === "zap";
    parts.push(pays ? `pays ${moves}` : `receives ${moves}`);
    if (t.expected.fees) parts.push(`fees ${t.expected.fees.tokenA} + ${t.expected.fees.tokenB}`);
    if (t.expected.deposited) {
      const into = t.kind === "zap" ? "deposits" : "moves";
      parts.push(`${into} ${t.expected.deposited.tokenA} ${p.tokenA.symbol} + ${t.expected.deposited.tokenB} ${p.tokenB.symbol}${t.kind === "zap" ? "" : " to the new range"}`);
    }
    if (t.kind === "zap" && t.expected.leftover) {
      parts.push(`returns ${t.expected.leftover.tokenA} ${p.tokenA.symbol} + ${t.expected.leftover.tokenB} ${p.tokenB.symbol}`);
    }
    // A Slipstream gauge's payment (a harvest, an unstake): rewards stream, so at least this.
    const reward = t.expected.reward;
    if (reward) parts.push(`pays at least ${reward.amount} ${reward.token.symbol} of rewards`);
  }
  return parts.length ? ` · ${parts.join(" · ")}` : "";
}

const DETAIL_FIELDS = [
  ["id", "Id"], ["source", "Source"], ["status", "Status"], ["chain", "Chain"], ["protocol", "Protocol"],
  ["pool", "Pool"], ["wallet", "Wallet"], ["tokenId", "Token id"], ["positionMint", "Position mint"],
  ["liquidity", "Liquidity"], ["tickLower", "Lower tick"], ["tickUpper", "Upper tick"],
  ["movedFrom", "Moved from"], ["movedTo", "Moved to"],
  ["priceLower", "Lower price", price], ["priceUpper", "Upper price", price],
  ["currentPrice", "Current price", price], ["inRange", "In range"], ["stale", "Stale"],
  ["valueUsd", "Value", usd], ["costBasisUsd", "Cost basis", usd], ["feesEarnedUsd", "Fees earned", usd],
  ["hodlValueUsd", "Held instead", usd], ["impermanentLossUsd", "Impermanent loss", usd],
  ["withdrawnUsd", "Withdrawn", usd], ["feesCollectedUsd", "Fees collected", usd],
  ["historyComplete", "History complete"], ["historyReason", "History"], ["pricedNearest", "Priced at a nearer state"],
  ["pnlUsd", "PnL", signedUsd], ["pnlPercent", "PnL %", percent], ["feeAprPercent", "Fee APR", percent],
  ["readHeight", "Read at block"], ["refreshedAt", "Read", time], ["createdAt", "Opened", time],
  ["expiresAt", "Deadline", time], ["transactionHash", "Transaction"], ["closedAt", "Closed", time],
  ["closeReason", "Close reason"], ["valuationError", "Not valued"], ["readError", "Not read"],
];

function renderDetail(p) {
  state.detail = p;
  $("detail-title").textContent = `${p.tokenA?.symbol ?? ""}/${p.tokenB?.symbol ?? ""} position`;
  $("detail-range").replaceChildren(p.priceLower ? rangeBar(p) : "");
  const list = $("detail-fields");
  list.replaceChildren();
  for (const [key, label, format] of DETAIL_FIELDS) {
    if (!(key in p)) continue;
    const value = p[key];
    const shown = format ? format(value) : value === null ? "—" : String(value);
    figure(list, label, shown, key, String(value));
  }
  for (const token of [p.tokenA, p.tokenB].filter(Boolean)) {
    figure(list, token.symbol, `${amount(token.amount)} (${usd(token.valueUsd)})`, null, token.amount);
    figure(list, `${token.symbol} fees`, `${amount(token.feesEarned)} (${usd(token.feesEarnedUsd)})`, null, token.feesEarned);
    for (const [key, label] of [["deposited", "deposited"], ["withdrawn", "withdrawn"],
      ["uncollectedPrincipal", "withdrawn, not collected"], ["feesCollected", "fees collected"]]) {
      if (token[key] !== undefined && token[key] !== null) {
        figure(list, `${token.symbol} ${label}`, amount(token[key]), null, token[key]);
      }
    }
  }
  if (p.closing) figure(list, "Close requested", time(p.closing.requestedAt), "closing");
  const transactions = $("detail-transactions");
  transactions.replaceChildren();
  if (p.transactions?.length) {
    const h = document.createElement("h3");
    h.textContent = "To sign and send, in order";
    const ol = document.createElement("ol");
    for (const t of p.transactions) {
      const li = document.createElement("li");
      li.textContent = `${t.kind} → ${t.to}${transactionTerms(t, p)}`;
      li.title = t.data;
      ol.append(li);
    }
    transactions.append(h, ol);
  }
  // A watched wallet's position is shown, never acted on (the API answers 403).
  const watched = isWatched(p);
  $("detail-watched").hidden = !watched;
  $("close-position").hidden = p.status === "closed" || watched;
  $("close-position").textContent = p.status === "pending" ? "Cancel" : "Close position";
  // Actions act on an open EVM wallet position with nothing waiting for the chain.
  const actable = p.source === "wallet" && p.status === "active" && p.chain !== "solana" && !watched;
  $("detail-act").hidden = !actable;
  for (const b of ["act-collect", "act-increase", "act-decrease", "act-rebalance", "act-stake", "act-harvest"]) $(b).disabled = Boolean(p.action || p.closing);
  // A held PancakeSwap position may go into its deployment's farm (MasterChefV3), a Slipstream
  // one into its pool's gauge; a staked one's rewards may be harvested.
  const farmed = p.protocol === "pancakeswap-v3" || p.protocol === "aerodrome-slipstream";
  $("act-stake").hidden = !(farmed && !p.staked);
  $("act-harvest").hidden = !p.staked;
  $("act-confirm").hidden = !(p.action && p.transactions?.length && !p.action.transactionHash);
}

/** Asks the API for an action's transactions (run on the chain first) and shows them, their
 * gas and the amounts they move, for the user to confirm. */
async function askAction(kind) {
  try {
    clearError();
    const body = kind === "increase"
      ? { amountA: $("act-amount-a").value || "0", amountB: $("act-amount-b").value || "0" }
      : kind === "decrease" ? { percent: Number($("act-percent").value) }
      : kind === "rebalance" ? { priceLower: Number($("act-lower").value), priceUpper: Number($("act-upper").value) }
      : {};
    if ((kind === "increase" || kind === "rebalance") && $("act-swap").checked) body.swap = true;
    renderDetail(await state.api.post(`/positions/${state.detail.id}/${kind}`, body));
    $("detail-progress").textContent = "check the gas and amounts, then sign and send";
  } catch (e) {
    fail(e);
  }
}

async function confirmAction() {
  const progress = (text) => { $("detail-progress").textContent = text; };
  try {
    clearError();
    $("act-confirm").hidden = true;
    const p = await signAndFollow(state.detail, progress);
    renderDetail(p);
    await showHistory(p.id);
    progress(`${p.status}: done`);
    await Promise.all([showPortfolio(), showPositions()]);
  } catch (e) {
    fail(e);
  }
}

/** The position's history: its events, oldest first (the first page of 100). */
async function showHistory(id) {
  const page = await state.api.get(`/positions/${id}/history?limit=100`);
  const table = $("detail-history");
  table.replaceChildren();
  const head = document.createElement("tr");
  for (const title of ["Event", "Time", "Block", "Amounts", "Value"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = title;
    head.append(th);
  }
  table.append(head);
  for (const e of page.data) {
    const row = document.createElement("tr");
    row.className = "history-event";
    const tokens = [e.tokenA, e.tokenB].filter(Boolean).map((t) => {
      const split = t.fees !== undefined ? ` (fees ${amount(t.fees)})` : "";
      return `${amount(t.amount)}${split}`;
    });
    const values = [e.kind, e.time ? time(e.time) : "—", e.block ?? "—", tokens.join(" / ") || "—",
      e.valueUsd === null ? "—" : `${usd(e.valueUsd)}${e.priced === "nearest" ? " (nearest state)" : ""}`];
    for (const v of values) {
      const td = document.createElement("td");
      td.textContent = String(v);
      row.append(td);
    }
    if (e.transactionHash) row.title = e.transactionHash;
    table.append(row);
  }
  $("detail-history-total").textContent = `${page.total} event${page.total === 1 ? "" : "s"}`;
}

async function showDetail(id) {
  try {
    clearError();
    const shown = await state.api.get(`/positions/${id}`);
    renderDetail(shown);
    await Promise.all([showHistory(id), showPositionAlerts(state.api, id), showPositionChart(state.api, $("detail-chart"), shown)]);
    $("detail-progress").textContent = "";
    $("detail").hidden = false;
    $("detail").focus();
  } catch (e) {
    fail(e);
  }
}

/** Polls the position until it leaves `waiting` (pending, or a close not yet confirmed). */
async function follow(id, progress) {
  for (let i = 0; i < 400; i++) {
    const p = await state.api.get(`/positions/${id}`);
    if (p.status === "closed" || (p.status === "active" && !p.closing && !p.action)) return p;
    progress(`waiting for the chain (${p.status})…`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error("the chain has not settled it yet: look again later");
}

/** Sends an answer's transactions from the wallet, reports the last one's hash, follows it. A
 * move with a swap is two transactions: the withdrawal's hash is the moved position's, the
 * zap's the new one's. */
async function signAndFollow(position, progress) {
  if (!wallet.available()) throw new Error("this position's transactions need the wallet that signs them");
  const sent = await wallet.sendAll(position.transactions, (kind, h, status) =>
    progress(`${kind} ${status === "0x1" ? "mined" : "reverted"}: ${h}`));
  const reports = [[position.id, sent[sent.length - 1].hash]];
  const withdrawal = sent.find((t) => t.kind === "withdraw");
  if (position.movedTo && withdrawal && sent.some((t) => t.kind === "zap")) {
    reports.splice(0, 1, [position.id, withdrawal.hash], [position.movedTo, sent[sent.length - 1].hash]);
  }
  for (const [id, hash] of reports) {
    try {
      await state.api.post(`/positions/${id}/transactions`, { hash });
      progress(`reported ${hash}`);
    } catch (e) {
      // 409: nothing waits any more: the wallet's read settled it from the chain first.
      if (!(e instanceof ApiError && e.status === 409)) throw e;
    }
  }
  return follow(position.id, progress);
}

async function closeDetail() {
  const progress = (text) => { $("detail-progress").textContent = text; };
  try {
    clearError();
    let p = await state.api.post(`/positions/${state.detail.id}/close`);
    renderDetail(p);
    if (p.transactions?.length && p.status !== "closed") {
      p = await signAndFollow(p, progress);
      renderDetail(p);
      // Its history as it closed: the close's withdrawal among it.
      await showHistory(p.id);
    }
    progress(`${p.status}${p.closeReason ? `: ${p.closeReason}` : ""}`);
    await Promise.all([showPortfolio(), showPositions()]);
  } catch (e) {
    fail(e);
  }
}

// ---- wallets and the open form ----------------------------------------------------------------

async function showWallets() {
  const { data } = await state.api.get("/wallets");
  state.wallets = data;
  const list = $("wallet-list");
  list.replaceChildren();
  for (const w of data) {
    const li = document.createElement("li");
    const kind = w.watch ? " · watched (read only)" : w.kind === "contract" ? " · contract wallet" : "";
    li.textContent = `${w.chain} ${w.address} · ${w.positions ?? "?"} position(s)${kind}`;
    li.dataset.address = w.address;
    li.dataset.kind = w.kind;
    list.append(li);
  }
  $("link-wallet").hidden = !wallet.available();
  $("no-wallet").hidden = wallet.available();
  fillWalletChoice();
}

function fillWalletChoice() {
  const pool = state.pools[$("open-pool").selectedIndex];
  const select = $("open-wallet");
  const chosen = select.value;
  select.replaceChildren(new Option("simulated (no wallet)", ""));
  for (const w of state.wallets.filter((w) => pool && w.chain === pool.chain && !w.watch)) {
    select.append(new Option(w.address, w.address, false, w.address === chosen));
  }
}

async function loadPools() {
  const { data } = await state.api.get("/pools");
  state.pools = data.filter((p) => !p.discovered);
  const select = $("open-pool");
  const chosen = select.value;
  select.replaceChildren(...state.pools.map((p) =>
    new Option(`${p.tokenA.symbol}/${p.tokenB.symbol} · ${p.chain} · ${p.protocol} · ${poolFee(p)}`, p.pool, false, p.pool === chosen)));
  choosePool();
}

function choosePool() {
  const pool = state.pools[$("open-pool").selectedIndex];
  if (!pool) return;
  document.querySelector('[data-token="a"]').textContent = pool.tokenA.symbol;
  document.querySelector('[data-token="b"]').textContent = pool.tokenB.symbol;
  const current = pool.currentPrice;
  if (!$("open-lower").value) $("open-lower").value = Number((current * 0.85).toPrecision(6));
  if (!$("open-upper").value) $("open-upper").value = Number((current * 1.15).toPrecision(6));
  fillWalletChoice();
}

async function openPosition(event) {
  event.preventDefault();
  const progress = (text) => { $("open-progress").textContent = text; };
  const pool = state.pools[$("open-pool").selectedIndex];
  const body = {
    chain: pool.chain, protocol: pool.protocol, pool: pool.pool,
    amountA: $("open-a").value.trim(), amountB: $("open-b").value.trim(),
    priceLower: Number($("open-lower").value), priceUpper: Number($("open-upper").value),
  };
  if ($("open-wallet").value) {
    body.wallet = $("open-wallet").value;
    body.slippageBps = Number($("open-slippage").value);
    body.deadlineSeconds = Number($("open-deadline").value);
    if ($("open-swap").checked) body.swap = true;
  }
  try {
    clearError();
    progress("opening…");
    let p = await state.api.post("/positions", body);
    progress(`opened ${p.id} (${p.status})`);
    if (p.transactions?.length) {
      // What the wallet is about to sign, the swap and its price impact among it.
      const terms = p.transactions.map((t) => `${t.kind}${transactionTerms(t, p)}`).join("; ");
      $("open-terms").textContent = `to sign: ${terms}`;
      p = await signAndFollow(p, progress);
      progress(`${p.id}: ${p.status}${p.tokenId ? `, token ${p.tokenId}` : ""}${p.closeReason ? `: ${p.closeReason}` : ""}`);
    }
    await Promise.all([showPortfolio(), showPositions()]);
  } catch (e) {
    progress("");
    fail(e);
  }
}

/** Whether the position's wallet is one the caller only watches. */
function isWatched(p) {
  const held = (p.wallet ?? "").toLowerCase();
  return (state.wallets ?? []).some((w) => w.watch && w.chain === p.chain && w.address.toLowerCase() === held);
}

async function watchAddress(event) {
  event.preventDefault();
  try {
    clearError();
    const address = $("watch-address").value.trim();
    await state.api.post("/wallets", { chain: $("watch-chain").value, address, watch: true });
    $("watch-address").value = "";
    await Promise.all([showWallets(), showPortfolio(), showPositions()]);
  } catch (e) {
    fail(e);
  }
}

async function linkWallet() {
  try {
    clearError();
    await wallet.link(state.api, $("link-chain").value);
    await showWallets();
  } catch (e) {
    fail(e);
  }
}

// ---- wiring ---------------------------------------------------------------------------------

function selectTab(button) {
  for (const tab of $("status-tabs").querySelectorAll("button")) {
    tab.setAttribute("aria-selected", String(tab === button));
  }
  state.status = button.dataset.status;
  state.offset = 0;
  showPositions().catch(fail);
}

$("status-tabs").addEventListener("click", (e) => { if (e.target.dataset.status !== undefined) selectTab(e.target); });
$("source-filter").addEventListener("change", (e) => { state.source = e.target.value; state.offset = 0; showPositions().catch(fail); });
$("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE_SIZE); showPositions().catch(fail); });
$("next").addEventListener("click", () => { state.offset += PAGE_SIZE; showPositions().catch(fail); });
$("detail-back").addEventListener("click", () => { $("detail").hidden = true; });
$("close-position").addEventListener("click", closeDetail);
$("act-collect").addEventListener("click", () => askAction("collect"));
$("act-increase").addEventListener("click", () => askAction("increase"));
$("act-decrease").addEventListener("click", () => askAction("decrease"));
$("act-rebalance").addEventListener("click", () => askAction("rebalance"));
$("act-stake").addEventListener("click", () => askAction("stake"));
$("act-harvest").addEventListener("click", () => askAction("harvest"));
$("act-confirm").addEventListener("click", confirmAction);
$("open-pool").addEventListener("change", () => { $("open-lower").value = ""; $("open-upper").value = ""; choosePool(); });
$("open-form").addEventListener("submit", openPosition);
$("link-button").addEventListener("click", linkWallet);
$("watch-form").addEventListener("submit", watchAddress);
$("alert-settings").addEventListener("submit", (e) => {
  e.preventDefault();
  $("alert-progress").textContent = "";
  saveSettings(state.api).then(() => showFeed(state.api)).catch(fail);
});
$("sign-out").addEventListener("click", () => signIn());
$("signin-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token").value.trim();
  sessionStorage.setItem("token", token);
  start(token);
});

const token = takeToken();
apiBase();
if (token) start(token);
else signIn();
