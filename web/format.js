// Numbers for people: USD to cents with grouping, token amounts to a sensible precision (the
// exact value on hover), percentages to hundredths.

const usdFormat = new Intl.NumberFormat("en-US", {
  style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2,
});

/** Said where the API has no USD figure (a token without a route to a USD price): never 0. */
export const NO_PRICE = "no USD price";

export function usd(value) {
  return value === null || value === undefined ? NO_PRICE : usdFormat.format(value);
}

export function signedUsd(value) {
  if (value === null || value === undefined) return NO_PRICE;
  return (value > 0 ? "+" : "") + usdFormat.format(value);
}

export function percent(value) {
  return value === null || value === undefined ? "—" : `${value.toFixed(2)}%`;
}

/** A whole-token decimal string shown with grouping and at most `digits` fraction digits
 * (6 by default, more for amounts below 0.001 so that they are not shown as 0). */
export function amount(exact, digits = 6) {
  const [int, frac = ""] = String(exact).split(".");
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  if (!frac || /^0*$/.test(frac)) return grouped;
  let keep = digits;
  if (int === "0") {
    const zeros = frac.match(/^0*/)[0].length;
    keep = Math.max(digits, zeros + 3);
  }
  const shown = frac.slice(0, keep).replace(/0+$/, "");
  return shown ? `${grouped}.${shown}` : grouped;
}

/** Base units (a decimal string) as a whole-token decimal string, exactly (no float). */
export function wholeTokens(raw, decimals) {
  const digits = String(raw).padStart(decimals + 1, "0");
  const int = digits.slice(0, digits.length - decimals);
  const frac = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return frac ? `${int}.${frac}` : int;
}

/** A price (tokenB per tokenA): 6 significant digits, grouped. */
export function price(value) {
  if (value === null || value === undefined) return "—";
  if (value !== 0 && (Math.abs(value) >= 1e15 || Math.abs(value) < 1e-6)) return value.toExponential(4);
  return new Intl.NumberFormat("en-US", { maximumSignificantDigits: 6 }).format(value);
}

export function time(iso) {
  return iso ? new Date(iso).toLocaleString() : "—";
}

/** Parses what `usd` shows back into a number (the tests compare it with the API's). */
export function parseUsd(text) {
  return Number(text.replace(/[$,+]/g, ""));
}
