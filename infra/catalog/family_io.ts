/**
 * What each family feeds a graph and reads from it, for `catalog:verify`: the inputs a family can
 * provide (a graph may declare fewer) and the outputs it reads (each group: one of these names
 * must be there). Each family's contract is in its `info.ts` (`worker/families/<family>/`); the
 * output names are the adapters' own (`worker/families/output_names.ts`).
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS, type GraphContract } from "@svc/worker";

export type { GraphContract } from "@svc/worker";

/** The graphs of an entry and what its family expects of each. */
export function graphContracts(config: ModelConfig): GraphContract[] {
  // A file may name a family this release lacks: no contract to check it against.
  return FAMILY_INFOS[config.family]?.graphs(config) ?? [];
}

/** Mismatches between a graph's declared names and a contract (empty when it fits). */
export function contractProblems(
  c: GraphContract,
  inputNames: readonly string[],
  outputNames: readonly string[],
): string[] {
  const problems: string[] = [];
  const extra = inputNames.filter((n) => !c.feeds.includes(n));
  if (extra.length > 0) {
    problems.push(
      `${c.role}: graph input(s) ${extra.join(", ")} are not fed by the family ` +
        `(it feeds: ${c.feeds.join(", ")})`,
    );
  }
  for (const group of c.reads) {
    if (!group.some((n) => outputNames.includes(n))) {
      problems.push(
        `${c.role}: the family reads output ${group.join(" or ")}; ` +
          `the graph has ${outputNames.join(", ") || "none"}`,
      );
    }
  }
  return problems;
}
