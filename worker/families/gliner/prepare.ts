/**
 * Preparing a GLiNER item: its words, their tokens and the window rows of the first pass, and
 * what the whole item costs (`cost.ts`): every window under every prompt, its relation pass
 * counted for the most heads it can have. An item over `SVC_MAX_EXTRACT_ITEM_TOKENS` is refused
 * here, before its batch runs.
 */
import type { PreparedItem, WorkItem, WorkParams } from "../types.ts";
import { itemOverBudget } from "../extract_budget.ts";
import type { GlinerContext, RelationLead } from "./context.ts";
import { packLabels, passTokens } from "./cost.ts";
import { MAX_RELATION_HEADS, relationLabels } from "./relations.ts";
import type { GlinerRow } from "./rows.ts";
import { splitWords, type Word } from "./words.ts";

/**
 * Tokens a head entity is assumed to take when a relation pass is costed before the heads are
 * known (most entity mentions are one or two words); a pass whose real heads are longer is cut
 * to the bound by dropping its lowest-scoring heads.
 */
const ASSUMED_HEAD_TOKENS = 2;

/** An item split into words and window rows; `length` counts the tokens of all its rows. */
export interface GlinerItem extends PreparedItem {
  text: string;
  words: Word[];
  /** Sub-word ids of each word (the relation pass builds new rows from them). */
  wordIds: number[][];
  rows: GlinerRow[];
  /** Relation heads the client named (else the first pass's entities are the heads). */
  heads?: string[];
}

/** Split an item into words and window rows, and refuse it when its work is over the bounds. */
export function prepareItem(
  g: GlinerContext,
  item: WorkItem,
  index: number,
  params: WorkParams,
): GlinerItem {
  const tok = g.model.tokenizer;
  const text = item.text ?? "";
  const fail = (message: string): GlinerItem => ({
    index,
    length: 0,
    text,
    words: [],
    wordIds: [],
    rows: [],
    error: { code: "INVALID_INPUT", message },
  });
  const relations = params.entityLabels && params.labels ? params.labels : undefined;
  // An item that names its entities (mentions) needs no entity pass, unless schema fields are
  // read in that pass too.
  const named = relations && item.heads?.length && !params.fieldLabels?.length
    ? item.heads
    : undefined;
  const labels = firstPassLabels(params);
  if (!named && labels.length === 0) {
    return fail("GLiNER models need params.labels (entity types)");
  }
  // In relation mode the instruction belongs to the relation pass.
  const lead = params.entityLabels ? "" : params.prompt ?? "";
  const plan = named ? undefined : g.firstPass(JSON.stringify([lead, ...labels]));
  if (plan && "error" in plan) return fail(plan.error);
  if (relations) {
    // Relation types go into the second pass's labels: check them now.
    const bad = g.badLabel(JSON.stringify(relations));
    if (bad) return fail(bad);
  }
  const words = splitWords(text);
  const room = g.room(plan ? plan.prompt.ids.length : 0);
  // Texts repeat words a lot: tokenise each distinct word once.
  const cache = new Map<string, number[]>();
  const wordIds = words.map((w) => {
    let ids = cache.get(w.text);
    if (!ids) cache.set(w.text, ids = tok.bodyIds(w.text, room));
    return ids;
  });
  const rows = plan ? g.rows(wordIds, plan) : [];
  const length = rows.reduce((n, r) => n + r.ids.length, 0);
  let cost = length;
  let what = plan
    ? `${plural(rows.length, "window")} of ${plural(plan.prompt.labels, "label")}`
    : "";
  if (named && relations) {
    // The heads are known: the relation pass is costed exactly, and refused whole rather
    // than cut (the client named every one of these entities).
    const bad = g.badLabel(JSON.stringify(named));
    if (bad) return fail(bad);
    const rel = namedRelationCost(g, wordIds, named, relations, params);
    cost += rel.tokens;
    what = `${plural(named.length, "entity", "entities")} × ` +
      `${plural(relations.length, "relation type")} in ${plural(rel.prompts, "prompt")}, ` +
      `${plural(rel.rows, "window")} in all`;
  } else if (relations && rows.length > 0) {
    const lead = g.relationLead(params.prompt ?? g.s.relationPrompt);
    const rel = relationEstimate(g, wordIds.map((ids) => ids.length), relations, lead);
    cost += rel.tokens;
    what += ` for entities, then up to ${rel.heads} heads × ${relations.length} ` +
      `relation types in ${rel.prompts} prompts, ${rel.rows} windows in all`;
  }
  if (cost > g.budget.maxItemTokens) return fail(itemOverBudget(cost, g.budget, what));
  return { index, length, cost, text, words, wordIds, rows, heads: item.heads };
}

/** Tokens of the relation pass over the heads a client named: their prompts × the windows. */
function namedRelationCost(
  g: GlinerContext,
  wordIds: readonly number[][],
  heads: readonly string[],
  relations: readonly string[],
  params: WorkParams,
): { tokens: number; prompts: number; rows: number } {
  const lead = g.relationLead(params.prompt ?? g.s.relationPrompt);
  const plans = g.chunks(relationLabels(heads, relations), lead, new Map());
  const cost = passTokens(
    wordIds.map((ids) => ids.length),
    plans.map((p) => p.prompt.ids.length),
    g.shape(lead),
  );
  return { ...cost, prompts: plans.length };
}

/**
 * Tokens of an item's relation pass before its heads are known: the most heads it can have
 * (distinct entity texts, at most MAX_RELATION_HEADS), each assumed ASSUMED_HEAD_TOKENS long.
 */
function relationEstimate(
  g: GlinerContext,
  wordTokens: readonly number[],
  relations: readonly string[],
  lead: RelationLead,
): { tokens: number; heads: number; prompts: number; rows: number } {
  const heads = Math.min(MAX_RELATION_HEADS, wordTokens.length);
  const rel = g.relationTokens(JSON.stringify(relations));
  // Relation-major like relationLabels: `<<ENT>>`, the head, then `<> {relation}`.
  const sizes = rel.flatMap((r) =>
    new Array<number>(heads).fill(1 + Math.min(ASSUMED_HEAD_TOKENS + r, lead.budget - 2))
  );
  const packs = packLabels(sizes, lead.budget);
  const cost = passTokens(wordTokens, packs.map((p) => p.tokens), g.shape(lead));
  return { ...cost, heads, prompts: packs.length };
}

/** Labels of the first pass: entity types (or a relation model's entity labels), then fields. */
function firstPassLabels(params: WorkParams): string[] {
  return [...(params.entityLabels ?? params.labels ?? []), ...(params.fieldLabels ?? [])];
}

/** `n thing` or `n things` (or `n {many}`). */
function plural(n: number, thing: string, many = `${thing}s`): string {
  return `${n} ${n === 1 ? thing : many}`;
}
