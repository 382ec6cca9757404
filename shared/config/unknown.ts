/**
 * Unknown `SVC_*` variables: most are typos (`SVC_PROT`), which would otherwise be ignored in
 * silence. Each gets one warning naming the closest setting the process knows; a setting that was
 * removed is named as such, with what to do.
 */
import type { Env } from "./fields.ts";

/** Prefix of every setting of ours. */
const PREFIX = "SVC_";

/**
 * Settings that were removed, each with why and what to do. Their values are ignored (none of
 * them changed what a process does), so start-up goes on with a warning rather than an error.
 * None at present (SVC_ATTENTION_BACKEND, once listed here, is a setting again).
 */
export const REMOVED_SETTINGS: Readonly<Record<string, string>> = {};

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
  /** Set for a setting that was removed: why, and what to do. */
  removed?: string;
}

/** The `SVC_*` variables of `env` that are not in `known`, sorted by name. */
export function unknownSettings(
  env: Env,
  known: readonly string[],
  removed: Readonly<Record<string, string>> = REMOVED_SETTINGS,
): UnknownSetting[] {
  const knownSet = new Set(known);
  return Object.keys(env)
    .filter((n) => n.startsWith(PREFIX) && !knownSet.has(n))
    .sort()
    .map((name) =>
      Object.hasOwn(removed, name)
        ? { name, closest: undefined, removed: removed[name] }
        : { name, closest: closestName(name, known) }
    );
}

/** The warning printed at start-up for unknown variables (undefined when there are none). */
export function unknownSettingsWarning(
  env: Env,
  known: readonly string[],
  removedTable: Readonly<Record<string, string>> = REMOVED_SETTINGS,
): string | undefined {
  const all = unknownSettings(env, known, removedTable);
  const unknown = all.filter((u) => u.removed === undefined);
  const removed = all.filter((u) => u.removed !== undefined);
  const lines: string[] = [];
  if (unknown.length > 0) {
    const parts = unknown.map((u) => u.closest ? `${u.name} (did you mean ${u.closest}?)` : u.name);
    lines.push(`unknown settings ignored: ${parts.join(", ")}`);
  }
  for (const u of removed) lines.push(`${u.name} was removed and is ignored: ${u.removed}`);
  return lines.length > 0 ? lines.join("; ") : undefined;
}
