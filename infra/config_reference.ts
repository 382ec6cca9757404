/**
 * The README's configuration reference, generated from the settings schemas of both processes
 * (`deno task config:docs` writes it; tests/infra/config_reference.test.ts fails when it is stale).
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

/** The README path, relative to the repository root. */
export const README = new URL("../README.md", import.meta.url);

/** The README text with every generated table brought up to date. */
export function renderReadme(text: string): string {
  return withReference(text, REFERENCE_SECTIONS);
}

if (import.meta.main) {
  if (Deno.args.length > 0) {
    const help = wantsHelp(Deno.args);
    (help ? console.log : console.error)(
      "usage: npx deno task config:docs\n\nRewrite the README's configuration tables (between " +
        "the <!-- settings:ID --> markers)\nfrom the settings schemas; a test fails when they " +
        "are stale. It takes no options.",
    );
    Deno.exit(help ? 0 : 2);
  }
  const before = await Deno.readTextFile(README);
  const after = renderReadme(before);
  if (after === before) console.log("README.md: configuration reference already up to date");
  else {
    await Deno.writeTextFile(README, after);
    console.log("README.md: configuration reference regenerated");
  }
}
