/**
 * Class labels of a classifier's head, as `config.json` `id2label` (or a catalog entry) gives
 * them. Imports nothing: the main thread reads labels when it configures a model from its files.
 */

/** Labels by class id from an id2label list or `{"0": "O", ...}` map; undefined when absent. */
export function labelList(raw: unknown): string[] | undefined {
  if (Array.isArray(raw)) return raw.every((l) => typeof l === "string") ? raw : undefined;
  if (!raw || typeof raw !== "object") return undefined;
  const out: string[] = [];
  for (const [k, v] of Object.entries(raw)) {
    // Bounded: a class id in the millions would make a huge sparse array below.
    if (!/^\d{1,6}$/.test(k) || typeof v !== "string") return undefined;
    out[Number(k)] = v;
  }
  // Array.from turns holes (a missing class id) into undefined, which `every` then rejects.
  return out.length > 0 && Array.from(out).every((l) => typeof l === "string") ? out : undefined;
}
