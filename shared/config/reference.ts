/**
 * The configuration reference: markdown tables generated from the settings schemas, written into
 * a document between marker comments (`deno task config:docs`), checked by a test.
 */
import type { SettingInfo } from "./fields.ts";

/** A titled group of settings in the reference. */
export interface ReferenceSection {
  /** Marker id in the document: `<!-- settings:<id> -->` ... `<!-- /settings:<id> -->`. */
  id: string;
  fields: Readonly<Record<string, SettingInfo>>;
}

/** Escape a cell: pipes would split it, newlines would end the row. */
function cell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

/** Width as `deno fmt` aligns tables (code points; the docs stay in narrow characters). */
function width(s: string): number {
  return [...s].length;
}

/** A markdown table, columns padded the way `deno fmt` leaves them. */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const all = [header.map(cell), ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, c) => Math.max(3, ...all.map((r) => width(r[c]))));
  const line = (r: readonly string[]) =>
    `| ${r.map((v, c) => v + " ".repeat(widths[c] - width(v))).join(" | ")} |`;
  const rule = `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`;
  return [line(all[0]), rule, ...all.slice(1).map(line)].join("\n");
}

/** The reference table of one group of settings: variable, default, effect. */
export function settingsTable(fields: Readonly<Record<string, SettingInfo>>): string {
  const rows = Object.entries(fields).map(([name, f]) => [
    `\`${name}\``,
    f.secret && f.shown === "unset" ? "unset (secret)" : f.shown,
    f.doc,
  ]);
  return markdownTable(["Variable", "Default", "Effect"], rows);
}

/** Begin and end markers of a generated section. */
export function markers(id: string): { begin: string; end: string } {
  return { begin: `<!-- settings:${id} -->`, end: `<!-- /settings:${id} -->` };
}

/**
 * `doc` with the text between each section's markers replaced by its generated table. Throws
 * when a section's markers are missing, so a renamed heading cannot drop a table in silence.
 */
export function withReference(doc: string, sections: readonly ReferenceSection[]): string {
  let out = doc;
  for (const s of sections) {
    const { begin, end } = markers(s.id);
    const i = out.indexOf(begin);
    const j = out.indexOf(end);
    if (i < 0 || j < i) throw new Error(`markers ${begin} ... ${end} not found`);
    out = out.slice(0, i + begin.length) + "\n\n" + settingsTable(s.fields) + "\n\n" +
      out.slice(j);
  }
  return out;
}
