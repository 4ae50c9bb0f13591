// The book over time (decision 66): the portfolio's value and PnL without deposits over a
// period, its changes beside the total, and a position's value against holding its deposits,
// its fees earned and its pool's price against the range's bounds. The API's points as they are.

import { lineChart } from "./charts.js";
import { percent, price as priceText, signedUsd, time, usd } from "./format.js";

export const PERIODS = ["1d", "7d", "30d", "90d", "1y", "all"];

const num = (v) => (v === null || v === undefined ? null : Number(v));

/** A point's time on an axis: short, in the reader's zone. */
const short = (iso) => new Date(iso).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

/** What the USD charts' axes and legends are written with. */
const USD = { format: usd, signed: signedUsd, when: short };

/** `changes` of `GET /portfolio` as text, into `list` (a `<dl>`). */
export function showChanges(list, changes) {
  list.replaceChildren();
  for (const period of ["1d", "7d", "30d"]) {
    const change = changes?.[period];
    const dt = document.createElement("dt");
    dt.textContent = period;
    const dd = document.createElement("dd");
    dd.dataset.period = period;
    dd.textContent = change
      ? `${signedUsd(change.valueUsd)} (${percent(change.valuePercent)}), PnL ${signedUsd(change.pnlUsd)}`
      : "—";
    if (change) dd.title = `${time(change.from)} → ${time(change.to)}`;
    list.append(dt, dd);
  }
}

/** The portfolio's chart over `period` into `target`. */
export async function showPortfolioChart(api, target, period) {
  const chart = await api.get(`/portfolio/chart?period=${period}`);
  const points = chart.points;
  target.dataset.points = String(points.length);
  target.replaceChildren(lineChart(points.length, [
    { key: "value", label: "Value", values: points.map((p) => num(p.valueUsd)) },
    { key: "pnl", label: "PnL (deposits out)", values: points.map((p) => num(p.pnlUsd)), axis: "right" },
  ], {
    ...USD,
    times: points.map((p) => p.time),
    label: `The portfolio's value and PnL, ${period}`,
    describe: (i) => {
      const p = points[i];
      const note = p.exact ? "" : ` (not exact: ${p.reason ?? "see the positions"})`;
      return `${time(p.time)}${p.block === undefined ? "" : `, block ${p.block}`}: value ${usd(p.valueUsd)}, PnL ${signedUsd(p.pnlUsd)}, fees ${usd(p.feesEarnedUsd)}, net deposits ${usd(p.netDepositsUsd)}, ${p.positions} position(s)${note}`;
    },
  }));
}

/** A position's charts (its value against holding its deposits, its fees; its pool's price
 * against the range's bounds) over the last week into `target`. */
export async function showPositionChart(api, target, position) {
  const [chart, pool] = await Promise.all([
    api.get(`/positions/${position.id}/chart?period=7d`),
    api.get(`/pools/${position.chain}/${position.pool}/chart?period=7d`).catch(() => null),
  ]);
  const points = chart.points;
  target.dataset.points = String(points.length);
  const value = lineChart(points.length, [
    { key: "value", label: "Value", values: points.map((p) => num(p.valueUsd)) },
    { key: "held", label: "Held instead", values: points.map((p) => num(p.heldInsteadUsd)) },
    { key: "fees", label: "Fees earned", values: points.map((p) => num(p.feesEarnedUsd)), axis: "right" },
  ], {
    ...USD,
    times: points.map((p) => p.time),
    label: "The position's value against holding its deposits, and its fees earned",
    describe: (i) => {
      const p = points[i];
      const note = p.exact ? "" : ` (not exact: ${p.reason})`;
      return `${time(p.time)}, block ${p.block}: value ${usd(p.valueUsd)}, held instead ${usd(p.heldInsteadUsd)}, fees ${usd(p.feesEarnedUsd)}, PnL ${signedUsd(p.pnlUsd)}${p.inRange ? "" : ", out of range"}${note}`;
    },
  });
  const prices = pool?.points ?? [];
  const range = lineChart(prices.length, [
    { key: "price", label: `Price (${position.tokenB?.symbol ?? "B"} per ${position.tokenA?.symbol ?? "A"})`, values: prices.map((p) => Number(p.price)) },
  ], {
    format: priceText,
    signed: (v) => (v > 0 ? "+" : "") + priceText(v),
    when: short,
    times: prices.map((p) => p.time),
    label: "The pool's price against the range's bounds",
    levels: position.priceLower ? [
      { key: "lower", label: "Lower bound", value: Number(position.priceLower) },
      { key: "upper", label: "Upper bound", value: Number(position.priceUpper) },
    ] : [],
    describe: (i) => `${time(prices[i].time)}, block ${prices[i].block}: price ${prices[i].price}`,
  });
  target.replaceChildren(value, range);
}
