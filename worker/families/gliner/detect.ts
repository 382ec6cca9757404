/**
 * Detecting a GLiNER model: its config file, and from its span mode whether it is a multitask
 * model (relations too).
 */
import type { ModelConfigInput, OutputKind } from "@svc/shared/catalog/schema";
import type { Ctx } from "../../catalog/detect/context.ts";

/** Outputs by span mode, and the decoding defaults. */
export function configureGliner(ctx: Ctx, out: ModelConfigInput): void {
  const { rec } = ctx;
  const fo = out.family_options!;
  const mode = ctx.gliner?.span_mode;
  if (mode === "token_level") {
    out.outputs = rec.set(
      "outputs",
      ["entities", "relations", "data"] as OutputKind[],
      "gliner_config.json span_mode (token_level: a multitask model, relations too)",
    );
  } else {
    rec.set(
      "outputs",
      out.outputs,
      `gliner_config.json span_mode (${String(mode ?? "unset")})`,
    );
  }
  fo.threshold = 0.5;
  fo.flat_ner = true;
}

/** GLiNER's own files by role. */
export function glinerFiles(has: (path: string) => boolean): Record<string, string> {
  const out: Record<string, string> = { gliner_config: "gliner_config.json" };
  if (has("added_tokens.json")) out.added_tokens = "added_tokens.json";
  return out;
}
