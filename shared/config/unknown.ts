/**
 * Unknown `SVC_*` variables: most are typos (`SVC_PROT`), which would otherwise be ignored in
 * silence. Each gets one warning naming the closest setting the process knows.
 */
import type { Env } from "./fields.ts";

/** Prefix of every setting of ours. */
const PREFIX = "SVC_";

/** Levenshtein distance (insertions, deletions, substitutions), two rows of memory. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost));
    }
    prev = row;
  }
  return prev[b.length];
}

/** The known name closest to `name` (ties: the first in `known`). */
export function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** One `SVC_*` variable no setting reads, with the closest known name. */
export interface UnknownSetting {
  name: string;
  closest: string | undefined;
}

/** The `SVC_*` variables of `env` that are not in `known`, sorted by name. */
export function unknownSettings(env: Env, known: readonly string[]): UnknownSetting[] {
  const knownSet = new Set(known);
  return Object.keys(env)
    .filter((n) => n.startsWith(PREFIX) && !knownSet.has(n))
    .sort()
    .map((name) => ({ name, closest: closestName(name, known) }));
}

/** The warning printed at start-up for unknown variables (undefined when there are none). */
export function unknownSettingsWarning(env: Env, known: readonly string[]): string | undefined {
  const unknown = unknownSettings(env, known);
  if (unknown.length === 0) return undefined;
  const parts = unknown.map((u) => u.closest ? `${u.name} (did you mean ${u.closest}?)` : u.name);
  return `unknown settings ignored: ${parts.join(", ")}`;
}
