/**
 * The docs' curl examples as requests, parsed from the markdown itself (README.md, docs/api.md,
 * docs/extract.md, docs/fleet.md) so the tests run exactly what a reader copies. Only self-contained examples against the local stack are
 * taken: `curl -s localhost:8080/...` with a literal body (no shell variables such as `$IMG`).
 */

/** One example: path, headers and body as written. */
export interface CurlExample {
  /** Heading the example sits under (for messages). */
  section: string;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

/** Every local curl example of a markdown document, in order. */
export function curlExamples(markdown: string): CurlExample[] {
  const out: CurlExample[] = [];
  let section = "";
  let inSh = false;
  let block: string[] = [];
  for (const line of markdown.split("\n")) {
    const fence = line.trim();
    if (!inSh && /^#{1,6} /.test(line)) section = line.replace(/^#+ /, "");
    if (!inSh && fence === "```sh") {
      inSh = true;
      block = [];
    } else if (inSh && fence === "```") {
      inSh = false;
      out.push(...parseBlock(block.join("\n"), section));
    } else if (inSh) {
      block.push(line);
    }
  }
  return out;
}

/** The curl commands of one shell block (continuation lines joined). */
function parseBlock(text: string, section: string): CurlExample[] {
  const out: CurlExample[] = [];
  // Join `\`-continued lines; a quoted body may also span lines on its own.
  const joined = text.replace(/\\\n\s*/g, " ");
  const re = /curl -s localhost:8080(\/\S+)((?:\s+-H '[^']*')*)(?:\s+-d '([^']*)')?/g;
  for (const m of joined.matchAll(re)) {
    const [, path, headerText, body] = m;
    // A body spliced with a shell variable ('...'$IMG'...') needs a file: not self-contained.
    const after = joined[(m.index ?? 0) + m[0].length];
    if (after === "$" || path.includes("$")) continue;
    const headers: Record<string, string> = {};
    for (const h of headerText.matchAll(/-H '([^:]+):\s*([^']*)'/g)) {
      headers[h[1].toLowerCase()] = h[2];
    }
    out.push({ section, method: body === undefined ? "GET" : "POST", path, headers, body });
  }
  return out;
}

/** One shell command of a recipe: leading `NAME=value` assignments, then the words. */
export interface ShellCommand {
  env: Record<string, string>;
  argv: string[];
}

/**
 * The first `sh` block under the heading `heading` (exact text, any level), as its source text
 * and its commands (comments dropped, `\`-continued lines joined; words split on spaces, which
 * is all the recipes use outside curl bodies).
 */
export function recipe(
  markdown: string,
  heading: string,
): { text: string; commands: ShellCommand[] } {
  const lines = markdown.split("\n");
  const at = lines.findIndex((l) => /^#{1,6} /.test(l) && l.replace(/^#+ /, "") === heading);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const open = lines.findIndex((l, i) => i > at && l.trim() === "```sh");
  const close = lines.findIndex((l, i) => i > open && l.trim() === "```");
  if (open < 0 || close < 0) throw new Error(`no sh block under "${heading}"`);
  const text = lines.slice(open + 1, close).join("\n");
  const commands = text.replace(/\\\n\s*/g, " ").split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const words = l.split(/\s+/);
      const env: Record<string, string> = {};
      while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(words[0])) {
        const w = words.shift()!;
        env[w.slice(0, w.indexOf("="))] = w.slice(w.indexOf("=") + 1);
      }
      return { env, argv: words };
    });
  return { text, commands };
}

/**
 * The `SVC_MODELS=… npm start` line of a section of a markdown document (its value as written),
 * or undefined when the section has none.
 */
export function svcModelsLine(markdown: string, section: string): string | undefined {
  let current = "";
  for (const line of markdown.split("\n")) {
    if (/^#{1,6} /.test(line)) current = line.replace(/^#+ /, "");
    const m = /^SVC_MODELS=(\S+) npm start\b/.exec(line.trim());
    if (m && current === section) return m[1];
  }
  return undefined;
}
