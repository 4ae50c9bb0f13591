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
