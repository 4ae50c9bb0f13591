// Alerts on the page (decision 61): the caller's feed (newest first, each with its position),
// their alert settings, and a position's last events in its detail.

import { amount, time, wholeTokens } from "./format.js";

const $ = (id) => document.getElementById(id);

/** What each type says, briefly. */
const LABELS = {
  "position.range.exited": "left its range",
  "position.range.entered": "back in range",
  "position.range.approaching": "near a bound",
  "position.fees.threshold": "fees past the threshold",
  "position.liquidity.changed": "liquidity changed",
  "position.fees.collected": "fees collected",
  "position.closed": "closed",
  "position.transferred": "transferred",
  "position.staked": "staked",
  "position.unstaked": "unstaked",
  "position.event.retracted": "taken back (reorg)",
  "webhook.test": "webhook test",
};

/** The pool an event is of, by its tokens' symbols; its position's id where none is known. */
function pair(e) {
  const d = e.data ?? {};
  const tokens = d.tokens ?? d.symbols;
  return tokens ? tokens.join("/") : e.positionId ?? "—";
}

/** The figures an event's data holds, in one line. */
function details(e) {
  const d = e.data ?? {};
  if (d.tick !== undefined) return `tick ${d.tick} (range ${d.tickLower} – ${d.tickUpper})${d.price ? `, price ${d.price}` : ""}`;
  if (d.feesUnclaimedUsd) return `$${d.feesUnclaimedUsd} unclaimed (threshold $${d.thresholdUsd})`;
  if (d.retractedEventId) return `${LABELS[d.retractedType] ?? d.retractedType} ${d.transaction ?? ""} taken back`;
  if (d.amounts) {
    // Shown as every amount of the page is; base units only where the token is unknown.
    const amounts = d.amounts.map((raw, i) => d.decimals
      ? `${amount(wholeTokens(raw, d.decimals[i]))} ${d.symbols?.[i] ?? ""}`.trim()
      : `${raw} base units`);
    return `${amounts.join(" + ")}${d.liquidityDelta ? `, liquidity ${d.liquidityDelta}` : ""}`;
  }
  return d.transaction ?? d.message ?? "";
}

function row(e, withPosition) {
  const tr = document.createElement("tr");
  tr.className = "alert-event";
  tr.dataset.id = e.id;
  tr.dataset.type = e.type;
  if (e.positionId) tr.dataset.position = e.positionId;
  // When it happened on chain (its block's time) where the event says, else when it was told.
  const cells = [time(e.data?.blockTime ?? e.createdAt), LABELS[e.type] ?? e.type];
  if (withPosition) cells.push(pair(e));
  cells.push(details(e), e.block ?? "—");
  for (const text of cells) {
    const td = document.createElement("td");
    td.textContent = String(text);
    tr.append(td);
  }
  if (e.notDelivered) tr.title = e.notDelivered;
  if (e.retractedBy) {
    tr.classList.add("retracted");
    tr.title = "taken back: a reorg replaced its block";
  }
  return tr;
}

function table(target, events, withPosition) {
  target.replaceChildren();
  const head = document.createElement("tr");
  const titles = ["Time", "Event", ...(withPosition ? ["Position"] : []), "Details", "Block"];
  for (const title of titles) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = title;
    head.append(th);
  }
  target.append(head);
  for (const e of events) target.append(row(e, withPosition));
}

/** The caller's feed: the last 20 events, newest first. */
export async function showFeed(api) {
  const page = await api.get("/events?limit=20");
  table($("alert-feed"), page.data, true);
  $("alert-total").textContent = `${page.total} event${page.total === 1 ? "" : "s"} in the last 30 days`;
}

/** A position's last five events, in its detail. */
export async function showPositionAlerts(api, id) {
  const page = await api.get(`/events?positionId=${id}&limit=5`);
  table($("detail-alerts"), page.data, false);
}

/** The caller's settings, in the form. */
export async function showSettings(api) {
  const s = await api.get("/alerts");
  const types = $("alert-types");
  for (const old of types.querySelectorAll("label")) old.remove();
  for (const [type, label] of Object.entries(LABELS)) {
    if (type === "webhook.test") continue;
    const wrap = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = type;
    box.checked = s.types.includes(type);
    wrap.append(box, ` ${label}`);
    types.append(wrap);
  }
  $("alert-approach").value = s.approachPercent;
  $("alert-threshold").value = s.feeThresholdUsd ?? "";
  $("alert-cooldown").value = s.cooldownMinutes;
}

/** Saves the form's settings (the API says what is wrong, if anything). */
export async function saveSettings(api) {
  const types = [...$("alert-types").querySelectorAll("input:checked")].map((b) => b.value);
  const threshold = $("alert-threshold").value.trim();
  const body = {
    types,
    approachPercent: Number($("alert-approach").value),
    feeThresholdUsd: threshold === "" ? null : threshold,
    cooldownMinutes: Number($("alert-cooldown").value),
  };
  await api.put("/alerts", body);
  $("alert-progress").textContent = "saved";
}
