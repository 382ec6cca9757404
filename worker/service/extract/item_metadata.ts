/**
 * Relation extraction with what each item's `metadata` says, as the SIE clients send it: the
 * entity types (`metadata.entity_labels`), and `metadata.entities`, either entity types (strings,
 * as GLiNER's relation pipeline names its argument) or entity mentions (`{text, label}` objects:
 * their labels are entity types and their texts the relations' heads). `options.entity_labels`,
 * when sent, applies to every item and wins over the items' types.
 *
 * Items whose entity types differ cannot share a batch (the types are the first pass's prompt),
 * so a request is split into groups of items with the same types, each run with its own options.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { ExtractParams } from "@svc/shared/schemas/extract";
import type { Item } from "@svc/shared/schemas/item";
import { effectiveOptions } from "../params.ts";
import { checkLabel, checkLabelList } from "./labels.ts";
import { MAX_ENTITY_LABELS, MAX_LABELS } from "./limits.ts";

/** Items that share their entity types, and the params they run with. */
export interface RelationGroup {
  /** Positions of the group's items in the request. */
  indices: number[];
  params: ExtractParams;
}

/** What one item's metadata says. */
interface ItemEntities {
  /** Entity types, absent when the item names none. */
  labels?: string[];
  /** Relation heads: the texts of the entity mentions it lists. */
  heads?: string[];
}

/**
 * The groups a relation request runs as, or undefined when the request is not one that reads
 * item metadata (not a relations model, no relation types, or no item carries entity metadata):
 * it is then planned as it is. Throws 400 for metadata of the wrong shape, naming the item.
 */
export function relationGroups(
  served: ServedModel,
  params: ExtractParams,
  items: readonly Item[],
): { groups: RelationGroup[]; heads: (string[] | undefined)[] } | undefined {
  if (!served.config.outputs.includes("relations") || !params.labels?.length) return undefined;
  if (!items.some((it) => it.metadata?.entity_labels ?? it.metadata?.entities)) return undefined;
  const shared = effectiveOptions(served, params.options).options.entity_labels;
  const read = items.map((it, i) => itemEntities(it, i));
  const groups = new Map<string, RelationGroup>();
  read.forEach((r, i) => {
    const labels = shared === undefined ? r.labels : undefined;
    if (shared === undefined && labels === undefined) {
      throw invalidInput(
        `items[${i}] names no entity types: relation extraction needs options.entity_labels, or ` +
          `metadata.entity_labels (or metadata.entities) on every item`,
      );
    }
    const key = JSON.stringify(labels ?? null);
    let g = groups.get(key);
    if (!g) {
      const options = labels ? { ...params.options, entity_labels: labels } : params.options;
      groups.set(key, g = { indices: [], params: { ...params, options } });
    }
    g.indices.push(i);
  });
  return { groups: [...groups.values()], heads: read.map((r) => r.heads) };
}

/** Read and check one item's `entity_labels` and `entities`. */
function itemEntities(item: Item, i: number): ItemEntities {
  const meta = item.metadata;
  if (meta === undefined) return {};
  const where = `items[${i}].metadata`;
  const named = meta.entity_labels;
  if (named !== undefined && !Array.isArray(named)) {
    throw invalidInput(`${where}.entity_labels must be a list of entity types`);
  }
  let labels = checkLabelList(named, `${where}.entity_labels`, MAX_ENTITY_LABELS);
  const entities = meta.entities;
  if (entities === undefined || entities === null) return { labels };
  if (!Array.isArray(entities)) {
    throw invalidInput(`${where}.entities must be a list of entity types or of {text, label}`);
  }
  if (entities.length > MAX_LABELS) {
    throw invalidInput(`${where}.entities has ${entities.length} entries; at most ${MAX_LABELS}`);
  }
  // The first entry says which form the list has: entity types, or mentions.
  if (typeof entities[0] === "string") {
    return { labels: labels ?? checkLabelList(entities, `${where}.entities`, MAX_ENTITY_LABELS) };
  }
  const heads: string[] = [];
  const types: string[] = [];
  entities.forEach((e, j) => {
    const at = `${where}.entities[${j}]`;
    if (e === null || typeof e !== "object" || Array.isArray(e)) {
      throw invalidInput(`${at} must be an object {text, label}, as the entries before it`);
    }
    const { text, label } = e as { text?: unknown; label?: unknown };
    heads.push(checkLabel(text, `${at}.text`));
    if (label !== undefined && label !== null) types.push(checkLabel(label, `${at}.label`));
  });
  labels ??= checkLabelList(types, `${where}.entities labels`, MAX_ENTITY_LABELS);
  return { labels, heads: [...new Set(heads)] };
}
