/**
 * Relation extraction with what each item's `metadata` says. The SIE clients send relation
 * requests as the SIE server's relation model reads them: relation types in `params.labels`, and
 * each item's entities in `metadata.entities`, a list of mentions `{text, label, start, end}`
 * (found by an earlier NER call). Those mentions are the item's entities: they are answered back
 * as its `entities` (score 1 unless given), the relations are found between them (their texts are
 * the heads, and only they are tails), and no entity pass runs for that item. An item with an
 * empty list (or no metadata, when no entity types are sent either) is answered with empty lists,
 * as that server answers it.
 *
 * Ours beside that: an item may name entity types instead, for the model to find its entities
 * first (`metadata.entity_labels`, or `metadata.entities` as a list of strings). A request's
 * `options.entity_labels` applies to every item without mentions and wins over their types.
 * Items whose entity types differ cannot share a batch (the types are the first pass's prompt), so
 * a request is split into groups of items with the same types, each run with its own options.
 */
import type { ServedModel } from "@svc/shared/catalog";
import { invalidInput } from "@svc/shared/errors";
import type { Entity, ExtractParams } from "@svc/shared/schemas/extract";
import type { Item } from "@svc/shared/schemas/item";
import { effectiveOptions } from "../params.ts";
import { checkLabel, checkLabelList } from "./labels.ts";
import { MAX_ENTITY_LABELS, MAX_LABELS } from "./limits.ts";
import { MAX_RELATION_HEADS } from "../../families/gliner/relations.ts";

/** Items that run together, and the params they run with. */
export interface RelationGroup {
  /** Positions of the group's items in the request. */
  indices: number[];
  params: ExtractParams;
  /** The group's items name their entities (mentions): it needs no entity types. */
  namedEntities?: boolean;
}

/** How a relation request with item metadata runs. */
export interface RelationRun {
  /** Groups of items that run; an item in none is answered with empty lists. */
  groups: RelationGroup[];
  /** Per item: the texts of its mentions (relation heads, and the only tails). */
  heads: (string[] | undefined)[];
  /** Per item: its mentions, answered as its entities (offsets as sent: code points). */
  mentions: (Entity[] | undefined)[];
}

/** What one item's metadata says. */
interface ItemEntities {
  /** Entity types, absent when the item names none. */
  labels?: string[];
  /** The item's entity mentions; an empty list when it says it has none. */
  mentions?: Entity[];
}

/**
 * How a relation request runs, or undefined when the request is not one that reads item
 * metadata (not a relations model, no relation types, or no item carries entity metadata): it
 * is then planned as it is. Throws 400 for metadata of the wrong shape, naming the item.
 */
export function relationGroups(
  served: ServedModel,
  params: ExtractParams,
  items: readonly Item[],
): RelationRun | undefined {
  if (!served.config.outputs.includes("relations") || !params.labels?.length) return undefined;
  const carries = (it: Item) => it.metadata?.entity_labels != null || it.metadata?.entities != null;
  if (!items.some(carries)) return undefined;
  const shared = effectiveOptions(served, params.options).options.entity_labels;
  const read = items.map((it, i) => itemEntities(it, i));
  const groups = new Map<string, RelationGroup>();
  read.forEach((r, i) => {
    if (r.mentions?.length === 0) return; // no entities: nothing to relate
    const named = r.mentions !== undefined;
    const labels = shared === undefined && !named ? r.labels : undefined;
    if (shared === undefined && !named && labels === undefined) return;
    // With shared types every item runs alike; mentions alone need no types.
    const key = named && shared === undefined ? "mentions" : JSON.stringify(labels ?? null);
    let g = groups.get(key);
    if (!g) {
      const options = labels ? { ...params.options, entity_labels: labels } : params.options;
      g = { indices: [], params: { ...params, options } };
      if (key === "mentions") g.namedEntities = true;
      groups.set(key, g);
    }
    g.indices.push(i);
  });
  return {
    groups: [...groups.values()],
    heads: read.map((r) =>
      r.mentions && r.mentions.length > 0 ? [...new Set(r.mentions.map((m) => m.text))] : undefined
    ),
    mentions: read.map((r) => r.mentions),
  };
}

/** Read and check one item's `entity_labels` and `entities`. */
function itemEntities(item: Item, i: number): ItemEntities {
  const meta = item.metadata;
  if (meta === undefined) return {};
  const where = `items[${i}].metadata`;
  const named = meta.entity_labels ?? undefined;
  if (named !== undefined && !Array.isArray(named)) {
    throw invalidInput(`${where}.entity_labels must be a list of entity types`);
  }
  const labels = checkLabelList(named, `${where}.entity_labels`, MAX_ENTITY_LABELS);
  const entities = meta.entities;
  if (entities === undefined || entities === null) return { labels };
  if (!Array.isArray(entities)) {
    throw invalidInput(
      `${where}.entities must be a list of entity mentions {text, label, start, end} ` +
        `(or of entity types)`,
    );
  }
  if (entities.length > MAX_LABELS) {
    throw invalidInput(`${where}.entities has ${entities.length} entries; at most ${MAX_LABELS}`);
  }
  if (entities.length === 0) return { labels, mentions: [] };
  // The first entry says which form the list has: entity types, or mentions.
  if (typeof entities[0] === "string") {
    return { labels: labels ?? checkLabelList(entities, `${where}.entities`, MAX_ENTITY_LABELS) };
  }
  const mentions = entities.map((e, j) => mention(e, `${where}.entities[${j}]`));
  const distinct = new Set(mentions.map((m) => m.text)).size;
  if (distinct > MAX_RELATION_HEADS) {
    throw invalidInput(
      `${where}.entities names ${distinct} distinct entities; relations are found between at ` +
        `most ${MAX_RELATION_HEADS} per item (split the text)`,
    );
  }
  return { labels, mentions };
}

/** One mention `{text, label?, start?, end?, score?}`, checked, as an answered entity. */
function mention(e: unknown, at: string): Entity {
  if (e === null || typeof e !== "object" || Array.isArray(e)) {
    throw invalidInput(
      `${at} must be an object {text, label, start, end}, as the entries before it`,
    );
  }
  const { text, label, start, end, score } = e as Record<string, unknown>;
  const out: Entity = {
    text: checkLabel(text, `${at}.text`),
    label: label === undefined || label === null ? "" : checkLabel(label, `${at}.label`),
    score: 1,
  };
  if (score !== undefined && score !== null) {
    if (typeof score !== "number" || !(score >= 0 && score <= 1)) {
      throw invalidInput(`${at}.score must be a number from 0 to 1`);
    }
    out.score = score;
  }
  const offset = (v: unknown, name: string): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
      throw invalidInput(`${at}.${name} must be a character offset (a whole number from 0)`);
    }
    return v;
  };
  const s = offset(start, "start");
  const t = offset(end, "end");
  if (s !== undefined && t !== undefined && t < s) {
    throw invalidInput(`${at}.end must not be before its start`);
  }
  if (s !== undefined) out.start = s;
  if (t !== undefined) out.end = t;
  return out;
}
