/**
 * "Did you mean …?" for a model name nobody serves: the served names closest to it by edit
 * distance (case-insensitive). The cost is bounded whatever the fleet holds: the name from the
 * client is at most MAX_MODEL_NAME_LENGTH characters, at most MAX_CANDIDATES names are compared,
 * and each comparison is a banded distance that gives up past MAX_DISTANCE edits.
 */

/** Most names compared for one suggestion (the rest are not looked at). */
export const MAX_CANDIDATES = 2000;

/** Largest edit distance still suggested (a longer name allows up to a quarter of its length). */
export const MAX_DISTANCE = 3;

/** Most names suggested. */
const MAX_SUGGESTIONS = 3;

/**
 * Edit distance between `a` and `b` (insertions, deletions, substitutions, and swaps of two
 * neighbouring characters: `maen` is one edit from `mean`) when it is at most `limit`, else
 * `limit + 1`. Only a band of width 2·limit+1 is computed: O(|a|·limit).
 */
export function boundedDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  const width = b.length + 1;
  const over = limit + 1;
  let prev2 = new Array<number>(width).fill(over);
  let prev = new Array<number>(width);
  let cur = new Array<number>(width);
  for (let j = 0; j < width; j++) prev[j] = j <= limit ? j : over;
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - limit);
    const to = Math.min(b.length, i + limit);
    cur.fill(over);
    cur[0] = i <= limit ? i : over;
    let best = cur[0];
    for (let j = from; j <= to; j++) {
      const ai = a.charCodeAt(i - 1);
      const bj = b.charCodeAt(j - 1);
      let v = Math.min(prev[j - 1] + (ai === bj ? 0 : 1), prev[j] + 1, cur[j - 1] + 1);
      if (i > 1 && j > 1 && ai === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bj) {
        v = Math.min(v, prev2[j - 2] + 1);
      }
      cur[j] = v > limit ? over : v;
      if (cur[j] < best) best = cur[j];
    }
    if (best > limit) return over;
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[b.length];
}

/** The served names closest to `name` (best first, at most three), or none within reach. */
export function closestNames(name: string, candidates: Iterable<string>): string[] {
  const wanted = name.toLowerCase();
  const limit = Math.min(MAX_DISTANCE, Math.max(1, Math.floor(wanted.length / 4)));
  const found: { name: string; d: number }[] = [];
  let seen = 0;
  for (const c of candidates) {
    if (++seen > MAX_CANDIDATES) break;
    if (c === name) continue;
    const d = boundedDistance(wanted, c.toLowerCase(), limit);
    if (d <= limit) found.push({ name: c, d });
  }
  found.sort((x, y) => x.d - y.d || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return [...new Set(found.map((f) => f.name))].slice(0, MAX_SUGGESTIONS);
}

/** The 404 message for a model name: `model "x" is not in the catalog`, with suggestions. */
export function notInCatalogMessage(
  name: string,
  candidates: Iterable<string>,
  quote = "'",
  why = "is not in the catalog",
): string {
  const near = closestNames(name, candidates);
  const hint = near.length > 0 ? `; did you mean ${near.join(" or ")}?` : "";
  return `model ${quote}${name}${quote} ${why}${hint}`;
}
