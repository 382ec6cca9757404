/**
 * A deliberately small YAML reader for the manifests in infra/k8s/, so that the infra tests can
 * check structure (which probe belongs to which container, which selector matches which labels)
 * without a new dependency.
 *
 * Supported: `---` document separators, block mappings, block sequences (including `- key: v`
 * items), plain / "double" / 'single' quoted scalars, `#` comments, flow sequences of scalars
 * (`["ALL"]`) and the empty flow map `{}`. Everything else (block scalars `|` `>`, anchors,
 * tags, multi-line plain scalars, flow maps with content) is rejected with an error that names
 * the line: a manifest that needs more should make this reader grow, not be half-read.
 *
 * Every scalar is returned as a string (`8080`, `"8080"` and `true` included); callers convert.
 */

/** A parsed YAML value: scalars are strings; `key:` with nothing under it is null. */
export type YamlValue = string | null | YamlValue[] | { [key: string]: YamlValue };
/** A parsed mapping. */
export type YamlMap = { [key: string]: YamlValue };

interface Line {
  /** 1-based line number in the source, for error messages. */
  no: number;
  indent: number;
  text: string;
}

/** Parse every document of a multi-document YAML text; empty documents are dropped. */
export function parseYamlDocuments(source: string): YamlValue[] {
  const docs: Line[][] = [[]];
  source.split(/\r?\n/).forEach((raw, i) => {
    if (/^---\s*$/.test(raw)) {
      docs.push([]);
      return;
    }
    if (/^\.\.\.\s*$/.test(raw)) throw new Error(`line ${i + 1}: document end marker unsupported`);
    const text = stripComment(raw, i + 1).trimEnd();
    if (text.trim() === "") return;
    if (/\t/.test(text.slice(0, text.length - text.trimStart().length))) {
      throw new Error(`line ${i + 1}: tab in indentation`);
    }
    const indent = text.length - text.trimStart().length;
    docs[docs.length - 1].push({ no: i + 1, indent, text: text.trimStart() });
  });
  return docs.filter((d) => d.length > 0).map((lines) => {
    const p = new Parser(lines);
    const v = p.block(lines[0].indent);
    p.expectEnd();
    return v;
  });
}

/** Remove a `#` comment that starts the line or follows whitespace, outside quotes. */
function stripComment(line: string, no: number): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s:[,-]/.test(line[i - 1]))) {
      quote = c;
    } else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]))) {
      return line.slice(0, i);
    }
  }
  if (quote) throw new Error(`line ${no}: unterminated quote`);
  return line;
}

class Parser {
  #i = 0;
  constructor(private readonly lines: Line[]) {}

  expectEnd(): void {
    const l = this.lines[this.#i];
    if (l) throw new Error(`line ${l.no}: unexpected indentation or content: ${l.text}`);
  }

  /** A mapping or a sequence whose lines start at column `indent`. */
  block(indent: number): YamlValue {
    const l = this.lines[this.#i];
    return isItem(l.text) ? this.sequence(indent) : this.mapping(indent);
  }

  sequence(indent: number): YamlValue[] {
    const out: YamlValue[] = [];
    while (this.#i < this.lines.length) {
      const l = this.lines[this.#i];
      // A key at the same column ends a sequence written at its key's column ("key:\n- a").
      if (l.indent < indent || (l.indent === indent && !isItem(l.text))) break;
      if (l.indent > indent) {
        throw new Error(`line ${l.no}: expected a "- " item at column ${indent}`);
      }
      const rest = l.text.slice(1).trimStart();
      if (rest === "") {
        this.#i++;
        const next = this.lines[this.#i];
        out.push(next && next.indent > indent ? this.block(next.indent) : null);
      } else if (splitKey(rest, l.no) !== null) {
        // `- key: value`: a mapping whose first line is the rest of this one. Re-read this line
        // as that mapping's first line, at the column where `key` starts.
        const column = indent + (l.text.length - rest.length);
        this.lines[this.#i] = { no: l.no, indent: column, text: rest };
        out.push(this.mapping(column));
      } else {
        this.#i++;
        out.push(scalar(rest, l.no));
        this.noDeeper(indent, l.no);
      }
    }
    return out;
  }

  mapping(indent: number): YamlMap {
    const out: YamlMap = {};
    while (this.#i < this.lines.length) {
      const l = this.lines[this.#i];
      if (l.indent < indent) break;
      if (l.indent > indent) throw new Error(`line ${l.no}: unexpected indentation`);
      if (isItem(l.text)) break; // a sequence at the parent key's column ends this mapping
      const kv = splitKey(l.text, l.no);
      if (kv === null) throw new Error(`line ${l.no}: expected "key: value", got: ${l.text}`);
      const [key, rest] = kv;
      if (Object.hasOwn(out, key)) throw new Error(`line ${l.no}: duplicate key ${key}`);
      this.#i++;
      if (rest !== "") {
        out[key] = scalar(rest, l.no);
        this.noDeeper(indent, l.no);
        continue;
      }
      const next = this.lines[this.#i];
      if (next && next.indent > indent) out[key] = this.block(next.indent);
      // YAML allows a sequence at the same column as its key ("key:\n- a").
      else if (next && next.indent === indent && isItem(next.text)) {
        out[key] = this.sequence(indent);
      } else out[key] = null;
    }
    return out;
  }

  /** After a scalar, a more indented line would be a multi-line scalar: unsupported. */
  noDeeper(indent: number, no: number): void {
    const next = this.lines[this.#i];
    if (next && next.indent > indent) {
      throw new Error(`line ${next.no}: continuation of the scalar on line ${no} is unsupported`);
    }
  }
}

function isItem(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/** `key: rest` → [key, rest]; null when the line is not a mapping entry. */
function splitKey(text: string, no: number): [string, string] | null {
  let key: string;
  let after: string;
  if (text.startsWith('"') || text.startsWith("'")) {
    const end = closingQuote(text, no);
    key = scalar(text.slice(0, end + 1), no) as string;
    after = text.slice(end + 1);
    if (!after.startsWith(":")) return null;
    after = after.slice(1);
  } else {
    // A plain key ends at the first ":" followed by a space or the end of the line, so values
    // such as http://svc-router or $(POD_IP):8080 stay whole.
    const m = /:(?=\s|$)/.exec(text);
    if (!m || m.index === 0) return null;
    key = text.slice(0, m.index).trimEnd();
    if (/^[[\]{},&*!|>%@`]/.test(key)) return null;
    after = text.slice(m.index + 1);
  }
  if (after !== "" && !/^\s/.test(after)) return null;
  return [key, after.trim()];
}

function closingQuote(text: string, no: number): number {
  const q = text[0];
  for (let i = 1; i < text.length; i++) {
    if (q === '"' && text[i] === "\\") i++;
    else if (text[i] === q) {
      if (q === "'" && text[i + 1] === "'") i++;
      else return i;
    }
  }
  throw new Error(`line ${no}: unterminated quote`);
}

/** A scalar, a flow sequence of scalars, or `{}`. */
function scalar(text: string, no: number): YamlValue {
  const t = text.trim();
  if (t.startsWith('"')) {
    if (closingQuote(t, no) !== t.length - 1) throw new Error(`line ${no}: text after quote`);
    // Double-quoted YAML with JSON's escapes, which is all these manifests use.
    return JSON.parse(t) as string;
  }
  if (t.startsWith("'")) {
    if (closingQuote(t, no) !== t.length - 1) throw new Error(`line ${no}: text after quote`);
    return t.slice(1, -1).replaceAll("''", "'");
  }
  if (t === "{}") return {};
  if (t.startsWith("[")) {
    if (!t.endsWith("]")) throw new Error(`line ${no}: multi-line flow sequence unsupported`);
    const inner = t.slice(1, -1).trim();
    if (inner === "") return [];
    if (/[[\]{}]/.test(inner)) throw new Error(`line ${no}: nested flow collection unsupported`);
    return splitFlow(inner, no).map((s) => scalar(s, no));
  }
  if (/^[|>]/.test(t)) throw new Error(`line ${no}: block scalars (| >) are unsupported`);
  if (/^[&*!{]/.test(t)) {
    throw new Error(`line ${no}: anchors, aliases, tags, flow maps unsupported`);
  }
  return t;
}

/** Split `"a", b, 'c'` on commas outside quotes. */
function splitFlow(inner: string, no: number): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === '"' || c === "'") i += closingQuote(inner.slice(i), no);
    else if (c === ",") {
      out.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  out.push(inner.slice(start));
  return out.map((s) => s.trim());
}
