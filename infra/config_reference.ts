/**
 * docs/configuration.md's settings tables, generated from the settings schemas of every process
 * (`deno task config:docs` writes them; tests/infra/config_reference.test.ts fails when stale).
 */
import { COMMON_FIELDS, type ReferenceSection, wantsHelp, withReference } from "@svc/shared/config";
import { ROUTER_REFERENCE } from "@svc/router/settings";
import { WORKER_REFERENCE } from "@svc/worker/settings";
import { START_REFERENCE } from "./start_settings.ts";

/** Every section, each setting in exactly one of them. */
export const REFERENCE_SECTIONS: readonly ReferenceSection[] = [
  { id: "common", fields: COMMON_FIELDS },
  ...WORKER_REFERENCE,
  ...ROUTER_REFERENCE,
  ...START_REFERENCE,
];

/** The configuration reference's path. */
export const CONFIG_DOC = new URL("../docs/configuration.md", import.meta.url);

/** The document's text with every generated table brought up to date. */
export function renderReference(text: string): string {
  return withReference(text, REFERENCE_SECTIONS);
}

if (import.meta.main) {
  if (Deno.args.length > 0) {
    const help = wantsHelp(Deno.args);
    (help ? console.log : console.error)(
      "usage: npx deno task config:docs\n\nRewrite docs/configuration.md's tables (between " +
        "the <!-- settings:ID --> markers)\nfrom the settings schemas; a test fails when they " +
        "are stale. It takes no options.",
    );
    Deno.exit(help ? 0 : 2);
  }
  const before = await Deno.readTextFile(CONFIG_DOC);
  const after = renderReference(before);
  if (after === before) console.log("docs/configuration.md: already up to date");
  else {
    await Deno.writeTextFile(CONFIG_DOC, after);
    console.log("docs/configuration.md: regenerated");
  }
}
