// Small SVG drawings: a breakdown as labelled bars with their percentages, a position's price
// range with the current price marked (log scale: ranges span orders of magnitude), and line
// charts with their axes.

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

/** A line chart of `series` ([{key, label, values: [number|null], axis}]) over `count` points,
 * read as a person reads a chart: a time axis under it (`times`, the points' ISO times), a
 * scale of its own for each side (`axis: "left"`, the default, or `"right"`: value and PnL
 * each on theirs), each series a polyline (a gap where a value is null), flat `levels`
 * ([{label, value}], on the left scale) as dashed lines, the period's change of each series in
 * its legend, and one column per point that, hovered or focused, moves a crosshair with a dot on
 * each series and calls `describe(i)` for the readout (the point's figures and its block). */
export function lineChart(count, series, { levels = [], describe, label, times = [], format = String, signed = String, when = String }) {
  const figure = document.createElement("div");
  figure.className = "line-chart";
  const readout = document.createElement("p");
  readout.className = "chart-readout muted";
  readout.setAttribute("aria-live", "polite");
  const finite = (vs) => vs.filter((v) => Number.isFinite(v));
  const sideOf = (s) => (s.axis === "right" ? "right" : "left");
  const all = finite([...series.flatMap((s) => s.values), ...levels.map((l) => l.value)]);
  if (count === 0 || all.length === 0) {
    readout.textContent = "No points yet: the series starts when the syncs pass their first boundaries.";
    figure.append(readout);
    return figure;
  }
  // Each side's scale: its series' (and, on the left, the levels') lowest and highest, padded.
  const scales = {};
  for (const side of ["left", "right"]) {
    const values = finite([
      ...series.filter((s) => sideOf(s) === side).flatMap((s) => s.values),
      ...(side === "left" ? levels.map((l) => l.value) : []),
    ]);
    if (values.length === 0) continue;
    let [low, high] = [Math.min(...values), Math.max(...values)];
    if (high - low < 1e-9) [low, high] = [low - 1, high + 1];
    const pad = (high - low) * 0.08;
    scales[side] = { low: low - pad, high: high + pad };
  }
  const x = (i) => (count === 1 ? 50 : 2 + (96 * i) / (count - 1));
  const y = (v, side = "left") => {
    const { low, high } = scales[side];
    return 38 - (36 * (v - low)) / (high - low);
  };
  const svg = el("svg", { viewBox: "0 0 100 40", preserveAspectRatio: "none", class: "line", role: "img", "aria-label": label });
  for (const side of Object.keys(scales)) {
    for (const t of [0.25, 0.5, 0.75]) {
      const { low, high } = scales[side];
      const at = y(low + (high - low) * t, side);
      if (side === "left") svg.append(el("line", { x1: 0, x2: 100, y1: at, y2: at, class: "chart-grid" }));
    }
  }
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
    s.values.forEach((v, i) => (Number.isFinite(v) ? run.push(`${x(i).toFixed(3)},${y(v, sideOf(s)).toFixed(3)}`) : flush()));
    flush();
  }
  // The crosshair and a dot on each series at the point shown.
  const crosshair = el("line", { x1: 0, x2: 0, y1: 0, y2: 40, class: "chart-crosshair" });
  const dots = series.map((s) => el("line", { class: `chart-dot chart-dot-${s.key}`, "data-dot": s.key }));
  svg.append(crosshair, ...dots);
  const show = (i) => {
    readout.textContent = describe(i);
    crosshair.setAttribute("x1", x(i));
    crosshair.setAttribute("x2", x(i));
    series.forEach((s, k) => {
      const v = s.values[i];
      const shown = Number.isFinite(v);
      dots[k].setAttribute("visibility", shown ? "visible" : "hidden");
      if (shown) {
        for (const [name, at] of [["x1", x(i)], ["x2", x(i)], ["y1", y(v, sideOf(s))], ["y2", y(v, sideOf(s))]]) dots[k].setAttribute(name, at);
      }
    });
  };
  for (let i = 0; i < count; i++) {
    const width = count === 1 ? 100 : 96 / (count - 1);
    const column = el("rect", { x: x(i) - width / 2, y: 0, width, height: 40, class: "chart-hit", "data-point": i, tabindex: -1 });
    column.addEventListener("mouseenter", () => show(i));
    column.addEventListener("focus", () => show(i));
    svg.append(column);
  }
  show(count - 1);
  // The scales beside the drawing (HTML: the drawing stretches, its labels must not).
  const axis = (side) => {
    const labels = document.createElement("div");
    labels.className = `chart-axis chart-axis-${side}`;
    labels.dataset.axis = side;
    const scale = scales[side];
    if (scale) {
      for (const t of [1, 0.5, 0]) {
        const tick = document.createElement("span");
        tick.textContent = format(scale.low + (scale.high - scale.low) * t);
        labels.append(tick);
      }
    }
    return labels;
  };
  const plot = document.createElement("div");
  plot.className = "chart-plot";
  plot.append(axis("left"), svg, axis("right"));
  const timeAxis = document.createElement("div");
  timeAxis.className = "chart-axis chart-axis-time";
  timeAxis.dataset.axis = "time";
  for (const i of [...new Set([0, Math.floor((count - 1) / 2), count - 1])]) {
    const tick = document.createElement("span");
    tick.textContent = times[i] ? when(times[i]) : "";
    timeAxis.append(tick);
  }
  const legend = document.createElement("p");
  legend.className = "chart-legend";
  for (const s of series) {
    const key = document.createElement("span");
    key.className = `legend-${s.key}`;
    key.dataset.series = s.key;
    const values = finite(s.values);
    const change = values.length ? values[values.length - 1] - values[0] : null;
    const scaleNote = Object.keys(scales).length > 1 ? ` (${sideOf(s)} scale)` : "";
    key.textContent = change === null
      ? `${s.label}${scaleNote}`
      : `${s.label}${scaleNote}: ${format(values[values.length - 1])}, ${signed(change)} over the period`;
    legend.append(key);
  }
  for (const level of levels) {
    const key = document.createElement("span");
    key.className = "legend-level";
    key.textContent = `${level.label}: ${format(level.value)}`;
    legend.append(key);
  }
  figure.append(plot, timeAxis, legend, readout);
  return figure;
}
