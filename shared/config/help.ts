/**
 * `--help` of the server processes (`deno task router|worker|start`): they take no command-line
 * options, every setting is an environment variable, so their help is how to run them and the
 * settings they read (name, default, the start of what it does), from the same schemas as the
 * reference in docs/configuration.md.
 */
import type { ReferenceSection } from "./reference.ts";

/** True when the command line asks for help. */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes("--help") || args.includes("-h");
}

/** The first clause of a setting's doc, cut to fit one line. */
function brief(doc: string, width: number): string {
  const plain = doc.replace(/`/g, "").replace(/\s+/g, " ").trim();
  const clause = plain.split(/[;:](?=\s)| \(/)[0];
  return clause.length <= width ? clause : clause.slice(0, width - 1).trimEnd() + "…";
}

/** Help text: usage lines, then each section's settings as `NAME  default  what it does`. */
export function processHelp(o: {
  usage: string;
  about: string;
  sections: readonly ReferenceSection[];
}): string {
  const rows = o.sections.flatMap((s) =>
    Object.entries(s.fields).map(([name, f]) => ({
      section: s.id,
      name,
      shown: (f.secret && f.shown === "unset" ? "unset (secret)" : f.shown).replace(/`/g, ""),
      doc: f.doc,
    }))
  );
  const nameW = Math.max(...rows.map((r) => r.name.length));
  const shownW = Math.min(28, Math.max(...rows.map((r) => r.shown.length)));
  const lines = [o.usage, "", o.about, ""];
  let section = "";
  for (const r of rows) {
    if (r.section !== section) {
      section = r.section;
      lines.push(`settings (${section}):`);
    }
    const shown = r.shown.length > shownW ? r.shown.slice(0, shownW - 1) + "…" : r.shown;
    lines.push(`  ${r.name.padEnd(nameW)}  ${shown.padEnd(shownW)}  ${brief(r.doc, 60)}`);
  }
  lines.push("", "Every setting, in full: docs/configuration.md.");
  return lines.join("\n");
}

/**
 * The answer to a server's command line: the help (exit 0), a refusal of any other argument
 * (exit 2: settings are environment variables, not flags), or undefined to start.
 */
export function serverArgs(
  args: readonly string[],
  help: () => string,
  what: string,
): { code: number; out: string } | undefined {
  if (args.length === 0) return undefined;
  if (wantsHelp(args)) return { code: 0, out: help() };
  return {
    code: 2,
    out: `${what} takes no command-line options (got ${args.join(" ")}): settings are ` +
      "environment variables, e.g. SVC_PORT=8081; --help lists them",
  };
}
