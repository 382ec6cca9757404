/**
 * The README's curl examples as requests, parsed from README.md itself so the quickstart test
 * runs exactly what a reader copies. Only self-contained examples against the local stack are
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
