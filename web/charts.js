// Two small SVG drawings: a breakdown as labelled bars with their percentages, and a position's
// price range with the current price marked (log scale: ranges span orders of magnitude).

const SVG = "http://www.w3.org/2000/svg";

function el(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** `items`: [{label, valueUsd, percentage}], largest first. */
export function breakdown(items, formatUsd) {
  const figure = document.createElement("div");
  figure.className = "breakdown";
  for (const item of items) {
    const row = document.createElement("div");
    row.className = "bar-row";
    row.dataset.label = item.label;
    const label = document.createElement("span");
    label.className = "bar-label";
    label.textContent = item.label;
    const svg = el("svg", { viewBox: "0 0 100 8", preserveAspectRatio: "none", class: "bar", role: "img",
      "aria-label": `${item.label}: ${item.percentage}%` });
    svg.append(el("rect", { x: 0, y: 0, width: 100, height: 8, class: "bar-track" }));
    svg.append(el("rect", { x: 0, y: 0, width: Math.max(0, Math.min(100, item.percentage)), height: 8, class: "bar-fill" }));
    const value = document.createElement("span");
    value.className = "bar-value";
    value.innerHTML = `<span data-usd>${formatUsd(item.valueUsd)}</span> <span class="muted" data-percent>${item.percentage.toFixed(2)}%</span>`;
    row.append(label, svg, value);
    figure.append(row);
  }
  return figure;
}

/** Where the current price sits against the range: "in", "below" or "above". */
export function side(lower, upper, current) {
  if (current < lower) return "below";
  if (current >= upper) return "above";
  return "in";
}

/** The range bar of a position: the bounds as ticks on a track, the current price as a marker
 * (clamped to the track's ends when far outside). */
export function rangeBar(position) {
  const { priceLower: lower, priceUpper: upper, currentPrice: current } = position;
  const spread = Math.max(Math.log(upper / lower), 1e-6);
  const min = Math.log(lower) - spread * 0.6;
  const max = Math.log(upper) + spread * 0.6;
  const x = (p) => 4 + 92 * Math.min(1, Math.max(0, (Math.log(p) - min) / (max - min)));
  const where = side(lower, upper, current);
  const closed = position.status === "closed";
  const svg = el("svg", {
    viewBox: "0 0 100 20", class: `range ${closed ? "closed" : where}`, role: "img",
    "aria-label": closed ? "closed" : where === "in" ? "in range" : `out of range, ${where}`,
  });
  svg.dataset.side = where;
  svg.append(el("rect", { x: 2, y: 8, width: 96, height: 4, rx: 2, class: "range-track" }));
  svg.append(el("rect", { x: x(lower), y: 6, width: Math.max(0.5, x(upper) - x(lower)), height: 8, class: "range-span" }));
  svg.append(el("rect", { x: x(lower) - 0.5, y: 3, width: 1, height: 14, class: "range-bound", "data-bound": "lower" }));
  svg.append(el("rect", { x: x(upper) - 0.5, y: 3, width: 1, height: 14, class: "range-bound", "data-bound": "upper" }));
  svg.append(el("circle", { cx: x(current), cy: 10, r: 2.6, class: "range-marker", "data-marker": "" }));
  svg.append(el("title", {}, `${lower} – ${upper}, now ${current}`));
  return svg;
}

/** A line chart of `series` ([{key, label, values: [number|null]}]) over `count` points: each
 * series a polyline (a gap where a value is null), flat `levels` ([{label, value}]) as dashed
 * lines, and one column per point that, hovered or focused, calls `describe(i)` for the readout
 * (the point's figures and its block). */
export function lineChart(count, series, { levels = [], describe, label }) {
  const figure = document.createElement("div");
  figure.className = "line-chart";
  const readout = document.createElement("p");
  readout.className = "chart-readout muted";
  readout.setAttribute("aria-live", "polite");
  const values = [...series.flatMap((s) => s.values), ...levels.map((l) => l.value)].filter((v) => Number.isFinite(v));
  if (count === 0 || values.length === 0) {
    readout.textContent = "No points yet: the series starts when the syncs pass their first boundaries.";
    figure.append(readout);
    return figure;
  }
  let [low, high] = [Math.min(...values), Math.max(...values)];
  if (high - low < 1e-9) [low, high] = [low - 1, high + 1];
  const pad = (high - low) * 0.08;
  [low, high] = [low - pad, high + pad];
  const x = (i) => (count === 1 ? 50 : 2 + (96 * i) / (count - 1));
  const y = (v) => 38 - (36 * (v - low)) / (high - low);
  const svg = el("svg", { viewBox: "0 0 100 40", preserveAspectRatio: "none", class: "line", role: "img", "aria-label": label });
  for (const level of levels) {
    if (!Number.isFinite(level.value)) continue;
    svg.append(el("line", { x1: 0, x2: 100, y1: y(level.value), y2: y(level.value), class: "chart-level", "data-level": level.label }));
  }
  for (const s of series) {
    let run = [];
    const flush = () => {
      if (run.length) svg.append(el("polyline", { points: run.join(" "), class: `chart-line chart-${s.key}`, "data-series": s.key }));
      run = [];
    };
    s.values.forEach((v, i) => (Number.isFinite(v) ? run.push(`${x(i).toFixed(3)},${y(v).toFixed(3)}`) : flush()));
    flush();
  }
  const show = (i) => { readout.textContent = describe(i); };
  for (let i = 0; i < count; i++) {
    const width = count === 1 ? 100 : 96 / (count - 1);
    const column = el("rect", { x: x(i) - width / 2, y: 0, width, height: 40, class: "chart-hit", "data-point": i, tabindex: -1 });
    column.addEventListener("mouseenter", () => show(i));
    svg.append(column);
  }
  show(count - 1);
  const legend = document.createElement("p");
  legend.className = "chart-legend";
  for (const s of [...series, ...levels]) {
    const key = document.createElement("span");
    key.className = `legend-${s.key ?? "level"}`;
    key.textContent = s.label;
    legend.append(key);
  }
  figure.append(svg, legend, readout);
  return figure;
}
