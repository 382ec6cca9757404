/** Detecting a cross-encoder's activation: sigmoid when config.json names it, else the raw logit. */
import type { ModelConfigInput } from "@svc/shared/catalog/schema";
import type { Ctx } from "../../catalog/detect/context.ts";
import { isJsonObject } from "../../catalog/detect/repo_view.ts";

/** `family_options.activation`, and where it came from. */
export function configureReranker(ctx: Ctx, out: ModelConfigInput): void {
  const { rec, config } = ctx;
  const fo = out.family_options!;
  const st = isJsonObject(config?.sentence_transformers) ? config.sentence_transformers : {};
  const act = st.activation_fn ?? config?.sbert_ce_default_activation_function;
  const sigmoid = typeof act === "string" && /Sigmoid/.test(act);
  fo.activation = rec.set(
    "family_options.activation",
    sigmoid ? "sigmoid" : "none",
    typeof act === "string"
      ? `config.json ${
        st.activation_fn
          ? "sentence_transformers.activation_fn"
          : "sbert_ce_default_activation_function"
      } (${act})`
      : "raw logit: config.json names no activation function",
  );
}
