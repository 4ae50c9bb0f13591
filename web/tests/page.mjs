// Drives the page in Debian's chromium (playwright-core) against a running local-api and devnet,
// for local-api/tests/web_page.rs, which compares what this reports the page showed with the
// API's own answers. Usage: node page.mjs CONFIG.json, CONFIG holding
//   {base, token, opsToken, badToken, rpc, wallet, watched, screenshots}
// It takes the README's pictures as it goes (`screenshots` is docs/screenshots): the portfolio and
// list, an action's transactions shown before signing, a position's detail with its history,
// and the phone layout; so they show the page as it is.
// Prints one JSON object: the portfolio as shown, every position row over every page (with where
// its range bar's marker sits against the bounds), the wallet flow's outcome, the phone layout's
// width, the sign-in state after a refused token, and any error the page logged.

import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
mkdirSync(config.screenshots, { recursive: true });
const errors = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});

async function rpc(method, params) {
  const response = await fetch(config.rpc, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return response.json();
}

/** A sync, after a block: a live chain moves on between syncs, and a sync follows the orders
 * of the pools whose state it updated. */
async function sync() {
  await rpc("evm_mine", []);
  await fetch(`${config.base}/markets/sync`, { method: "POST", headers: { Authorization: `Bearer ${config.opsToken}` } });
}

/** The position as the API answers it now. */
async function position(id) {
  const response = await fetch(`${config.base}/positions/${id}`, { headers: { Authorization: `Bearer ${config.token}` } });
  return response.json();
}

/** A page at `viewport`; with `wallet`, an injected EIP-1193 provider that forwards to anvil,
 * which signs for its unlocked account (as a wallet extension would after the user approves). */
async function open(viewport, wallet, token = config.token) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  // The browser logs every 4xx answer it loads. Expected: the refused token's 401, and a 409 to
  // a hash reported after the wallet's read already settled the order (the page goes on).
  page.on("console", (m) => {
    const url = m.location().url ?? "";
    const expected = (token !== config.token && m.text().includes("401"))
      || (m.text().includes("409") && url.endsWith("/transactions"));
    if (m.type() === "error" && !expected) errors.push(`${m.text()} at ${url}`);
  });
  if (wallet) {
    await page.exposeFunction("__devnet", (method, params) => rpc(method, params));
    await page.addInitScript((account) => {
      window.ethereum = {
        async request({ method, params = [] }) {
          if (method === "eth_requestAccounts" || method === "eth_accounts") return [account];
          if (method === "eth_sendTransaction") {
            // What the page sent, kept for the test; a gas limit of our own only where it gave none.
            window.__sent = [...(window.__sent ?? []), params[0]];
            params = [{ gas: "0x7a1200", ...params[0] }];
          }
          const answer = await window.__devnet(method, params);
          if (answer.error) throw new Error(answer.error.message);
          return answer.result;
        },
      };
    }, wallet);
  }
  await page.goto(`${config.base}/#token=${token}`);
  return page;
}

/** Where each row's marker sits against its bounds, from the drawn boxes. */
async function rows(page) {
  return page.$$eval("#position-table tbody tr[data-id]", (trs) => trs.map((tr) => {
    const center = (el) => { const r = el.getBoundingClientRect(); return r.left + r.width / 2; };
    const svg = tr.querySelector("svg.range");
    let marker = null;
    if (svg) {
      const [lower, upper, dot] = ["[data-bound=lower]", "[data-bound=upper]", "[data-marker]"].map((s) => center(svg.querySelector(s)));
      marker = lower < dot && dot < upper ? "between" : "outside";
    }
    return {
      id: tr.dataset.id,
      status: tr.querySelector("[data-status]").textContent,
      value: tr.querySelector('[data-usd="valueUsd"]').textContent,
      pnl: tr.querySelector('[data-usd="pnlUsd"]').textContent,
      side: svg?.dataset.side ?? null,
      marker,
    };
  }));
}

async function waitText(page, selector, pattern, work) {
  for (let i = 0; i < 240; i++) {
    const text = await page.textContent(selector);
    if (pattern.test(text)) return text;
    if (work) await work();
    await page.waitForTimeout(500);
  }
  throw new Error(`${selector} never showed ${pattern}: ${await page.textContent(selector)}`);
}

const out = { errors };
try {
  // Desktop: the portfolio and every page of positions.
  const page = await open({ width: 1280, height: 900 }, config.wallet);
  await page.waitForSelector('#totals [data-field="totalValueUsd"]');
  await page.waitForSelector("#position-table tbody tr[data-id]");
  out.portfolio = await page.$$eval("#totals dd[data-field]", (dds) => Object.fromEntries(dds.map((d) => [d.dataset.field, d.textContent])));
  out.assets = await page.$$eval("#assets .bar-row", (rs) => rs.map((r) => ({
    label: r.dataset.label, usd: r.querySelector("[data-usd]").textContent, percent: r.querySelector("[data-percent]").textContent,
  })));
  out.chains = await page.$$eval("#chains .bar-row", (rs) => rs.map((r) => ({
    label: r.dataset.label, usd: r.querySelector("[data-usd]").textContent, percent: r.querySelector("[data-percent]").textContent,
  })));
  out.pageInfo = await page.textContent("#page-info");
  // The chart over the last day: its lines, a column per point; the first point hovered.
  await page.click('#periods button[data-period="1d"]');
  await page.waitForSelector('#portfolio-chart .chart-hit, #portfolio-chart .chart-readout');
  await page.waitForFunction(() => document.querySelector("#periods button[data-period='1d']").getAttribute("aria-pressed") === "true");
  await page.waitForFunction(() => document.querySelectorAll("#portfolio-chart .chart-hit").length === Number(document.querySelector("#portfolio-chart").dataset.points));
  await page.hover('#portfolio-chart .chart-hit[data-point="0"]');
  out.chart = {
    points: Number(await page.getAttribute("#portfolio-chart", "data-points")),
    columns: await page.$$eval("#portfolio-chart .chart-hit", (cs) => cs.length),
    lines: await page.$$eval("#portfolio-chart polyline", (ls) => [...new Set(ls.map((l) => l.dataset.series))]),
    readout: await page.textContent("#portfolio-chart .chart-readout"),
  };
  out.changes = await page.$$eval("#changes dd", (dds) => Object.fromEntries(dds.map((d) => [d.dataset.period, d.textContent])));
  await page.screenshot({ path: join(config.screenshots, "page-desktop.png"), fullPage: true });
  out.rows = [];
  out.pages = 0;
  for (;;) {
    out.pages += 1;
    out.rows.push(...await rows(page));
    if (await page.isDisabled("#next")) break;
    const first = await page.getAttribute("#position-table tbody tr[data-id]", "data-id");
    await page.click("#next");
    await page.waitForFunction((id) => document.querySelector("#position-table tbody tr[data-id]")?.dataset.id !== id, first);
  }
  // Keyboard: the first tab stops are the page's own controls.
  await page.keyboard.press("Tab");
  out.firstFocus = await page.evaluate(() => document.activeElement?.tagName);

  // The wallet flows: link, open from the wallet (approvals and mint sent, the hash reported,
  // followed until active), then close it the same way.
  await page.selectOption("#link-chain", "ethereum");
  await page.click("#link-button");
  await page.waitForSelector(`#wallet-list li[data-address="${config.wallet}"]`);
  // From 1 WETH alone, swapped to fit: the swap and its price impact shown before the wallet
  // signs.
  await page.selectOption("#open-wallet", config.wallet);
  await page.fill("#open-slippage", "100");
  await page.fill("#open-b", "0");
  await page.check("#open-swap");
  await page.click('#open-form button[type="submit"]');
  out.openTerms = await waitText(page, "#open-terms", /to sign/);
  out.opened = await waitText(page, "#open-progress", /: (active|closed)/, sync);
  const id = out.opened.match(/^([0-9A-Z]{26})/)[1];
  out.openedId = id;
  await page.selectOption("#source-filter", "wallet");
  await page.waitForSelector(`#position-table tbody tr[data-id="${id}"]`);
  await page.click(`#position-table tbody tr[data-id="${id}"] button`);
  await page.waitForSelector('#detail-fields [data-field="tokenId"]');
  out.detailBefore = await page.$$eval("#detail-fields dd[data-field]", (dds) => Object.fromEntries(dds.map((d) => [d.dataset.field, d.title])));
  out.historyTotal = await page.textContent("#detail-history-total");
  out.historyKinds = await page.$$eval("#detail-history tr.history-event", (rows) => rows.map((r) => r.cells[0].textContent));
  // Actions from the detail: each answer's transactions shown with their gas and amounts before
  // the user signs; collect, then remove half.
  out.actions = [];
  for (const [button, setup] of [["#act-collect", null], ["#act-decrease", "50"]]) {
    if (setup) await page.fill("#act-percent", setup);
    await page.click(button);
    await page.waitForSelector("#act-confirm:not([hidden])");
    const shown = await page.$$eval("#detail-transactions li", (lis) => lis.map((li) => li.textContent));
    if (!setup) await page.locator("#detail").screenshot({ path: join(config.screenshots, "page-actions.png") });
    await page.click("#act-confirm");
    const done = await waitText(page, "#detail-progress", /^(active|closed): done/, sync);
    // Done is the receipt's; what it changed is the wallet's read, by the next sync at the latest.
    await sync();
    const liquidity = (await position(id)).liquidity;
    out.actions.push({ shown, done, liquidity });
  }
  await page.click("#close-position");
  out.closed = await waitText(page, "#detail-progress", /^closed/, sync);
  // A closed position offers no action.
  out.closedOffers = { actions: await page.isVisible("#detail-act"), close: await page.isVisible("#close-position") };
  await page.waitForSelector("#detail-history tr.history-event");
  await page.locator("#detail").screenshot({ path: join(config.screenshots, "page-history.png") });
  out.sentGas = await page.evaluate(() => (window.__sent ?? []).map((t) => t.gas ?? null));
  out.detailAfter = await page.$$eval("#detail-fields dd[data-field]", (dds) => Object.fromEntries(dds.map((d) => [d.dataset.field, d.title])));
  out.historyKindsAfter = await page.$$eval("#detail-history tr.history-event", (rows) => rows.map((r) => r.cells[0].textContent));
  // The wallet's positions as listed now (one on a pool no route prices), and the portfolio's note.
  out.walletRows = await rows(page);
  out.unpriced = await page.isVisible("#unpriced") ? await page.textContent("#unpriced") : null;

  // Alerts: the position's own in its detail, the feed once the page reloads, and the settings
  // saved through the form.
  await sync();
  await page.click(`#position-table tbody tr[data-id="${id}"] button`);
  // The detail was open already: wait for its alerts as read now (the close's among them).
  await page.waitForSelector('#detail-alerts tr.alert-event[data-type="position.closed"]');
  out.detailAlerts = await page.$$eval("#detail-alerts tr.alert-event", (rs) => rs.map((r) => r.dataset.id));
  await page.reload();
  await page.waitForSelector("#alert-feed tr.alert-event");
  out.feed = await page.$$eval("#alert-feed tr.alert-event", (rs) => rs.map((r) => ({ id: r.dataset.id, type: r.dataset.type })));
  out.feedTotal = await page.textContent("#alert-total");
  out.feedCells = await page.$$eval("#alert-feed tr.alert-event", (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent)));
  await page.waitForSelector("#alert-types input");
  await page.fill("#alert-cooldown", "15");
  await page.fill("#alert-threshold", "2.5");
  await page.uncheck('#alert-types input[value="position.range.approaching"]');
  await page.click("#alert-save");
  await waitText(page, "#alert-progress", /saved/);
  out.settings = await (await fetch(`${config.base}/alerts`, { headers: { Authorization: `Bearer ${config.token}` } })).json();
  await page.locator("#alerts").screenshot({ path: join(config.screenshots, "page-alerts.png") });

  // An address watched without a signature: listed as watched, its position's detail shows no
  // action and says why.
  await page.fill("#watch-address", config.watched);
  await page.selectOption("#watch-chain", "ethereum");
  await page.click("#watch-button");
  await page.waitForSelector('#wallet-list li[data-kind="watched"]');
  out.watchedItem = await page.textContent('#wallet-list li[data-kind="watched"]');
  const listed = await (await fetch(`${config.base}/positions?source=wallet&limit=100`, { headers: { Authorization: `Bearer ${config.token}` } })).json();
  const held = listed.data.find((p) => p.wallet.toLowerCase() === config.watched.toLowerCase() && p.status === "active");
  out.watchedPosition = held?.id ?? null;
  if (held) {
    await page.reload();
    await page.selectOption("#source-filter", "wallet");
    await page.waitForSelector(`#position-table tbody tr[data-id="${held.id}"]`);
    await page.click(`#position-table tbody tr[data-id="${held.id}"] button`);
    await page.waitForSelector("#detail-watched:not([hidden])");
    out.watchedDetail = {
      note: await page.textContent("#detail-watched"),
      actions: await page.isVisible("#detail-act"),
      close: await page.isVisible("#close-position"),
    };
  }

  // A phone: the same page in 375 px, nothing wider than the screen.
  const phone = await open({ width: 375, height: 812 }, null);
  await phone.waitForSelector("#position-table tbody tr[data-id]");
  out.phoneWidth = await phone.evaluate(() => document.documentElement.scrollWidth);
  await phone.screenshot({ path: join(config.screenshots, "page-phone.png") });

  // A token the API refuses: back to signing in, with the reason.
  const refused = await open({ width: 800, height: 600 }, null, config.badToken);
  await refused.waitForSelector("#signin-reason:not([hidden])");
  out.refused = await refused.textContent("#signin-reason");
  out.signinShown = await refused.isVisible("#signin");
} catch (e) {
  out.failure = String(e.stack ?? e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
