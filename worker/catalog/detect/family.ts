/**
 * Which family a repository holds, from its own files: explicit, then GLiNER's config,
 * sentence-transformers' modules, then `config.json` `architectures`: a family's own rule (its
 * info's `detect.architecture`), else, where the architecture leaves a choice, the labels or the
 * graph's outputs. Never a guess: what the files do not settle
 * is a DetectionError saying how to name the family.
 */
import { FAMILIES, type Family } from "@svc/shared/catalog/schema";
import { FAMILY_INFOS } from "../../families/infos.ts";
import { labelList } from "../../families/labels.ts";
import { type Ctx, describe, noOnnx, signatureOf } from "./context.ts";
import { DetectionError, sayIt } from "./errors.ts";
import { singleGraph } from "./onnx_files.ts";
import type { Json } from "./repo_view.ts";

/** The architecture named by config.json, or undefined when it names none. */
function architecture(config: Json | undefined): string | undefined {
  const a = config?.architectures;
  return Array.isArray(a) && typeof a[0] === "string" ? a[0] : undefined;
}

/** The model's family: explicit, then GLiNER, sentence-transformers, config.json architectures. */
export async function detectFamily(ctx: Ctx): Promise<Family> {
  const { rec, config, st } = ctx;
  const given = rec.given<Family>("family");
  if (given !== undefined) return given;
  if (ctx.gliner) return rec.set("family", "gliner", "gliner_config.json");
  if (st?.kind === "sparse") return rec.set("family", "sparse", st.kindFrom);
  const arch = architecture(config);
  if (st?.kind === "dense" && !(arch && /For(SequenceClassification|MaskedLM)$/.test(arch))) {
    return rec.set("family", "dense", `${st.kindFrom} (sentence-transformers pipeline)`);
  }
  if (!config) {
    throw new DetectionError(
      "config.json",
      undefined,
      "is missing, so nothing says what the model is (no gliner_config.json or modules.json " +
        "either)",
      sayIt("family", '"dense"'),
    );
  }
  if (!arch) {
    throw new DetectionError(
      "config.json",
      "architectures",
      `is missing (model_type ${JSON.stringify(config.model_type ?? null)})`,
      sayIt("family", '"dense"'),
    );
  }
  const from = `config.json architectures (${arch})`;
  // A family whose architecture alone names it says so in its info (the rules do not overlap).
  const named = FAMILIES.find((f) => FAMILY_INFOS[f].detect?.architecture?.(arch));
  if (named) return rec.set("family", named, from);
  // Where the architecture leaves a choice, the labels or the graph decide.
  if (arch.endsWith("ForSequenceClassification")) return sequenceFamily(ctx, arch);
  if (arch.endsWith("ForMaskedLM")) return await maskedLmFamily(ctx, arch);
  if (/Model$/.test(arch) && !/For[A-Z]\w*Model$/.test(arch)) {
    return rec.set("family", "dense", `${from}: an encoder without a task head`);
  }
  throw new DetectionError(
    "config.json",
    "architectures",
    `names ${arch}, which is not an architecture this server recognises (it reads *Model ` +
      "encoders, *ForSequenceClassification, *ForTokenClassification, *ForMaskedLM, CLIPModel," +
      " *ForObjectDetection, and GLiNER exports)",
    sayIt("family", '"dense"'),
  );
}

/** One label: a cross-encoder; an entailment label: NLI zero-shot; anything else: ask. */
function sequenceFamily(ctx: Ctx, arch: string): Family {
  const labels = labelList(ctx.config?.id2label);
  const from = `config.json architectures (${arch}) and id2label`;
  if (!labels) {
    throw new DetectionError(
      "config.json",
      "id2label",
      `is missing or not a map of class ids to names (${arch} needs it)`,
      sayIt("family", '"reranker"'),
    );
  }
  if (labels.length === 1) return ctx.rec.set("family", "reranker", `${from}: one label`);
  if (labels.some((l) => l.toLowerCase().startsWith("entail"))) {
    return ctx.rec.set("family", "zero_shot", `${from}: an entailment label (NLI)`);
  }
  throw new DetectionError(
    "config.json",
    "id2label",
    `names ${labels.length} labels (${labels.slice(0, 5).join(", ")}), neither one relevance ` +
      "score (a cross-encoder) nor an entailment class (NLI)",
    sayIt("family", '"reranker"'),
  );
}

/** A masked-LM export is SPLADE when its graph outputs vocabulary logits per token. */
async function maskedLmFamily(ctx: Ctx, arch: string): Promise<Family> {
  const graph = singleGraph(ctx.view.files);
  if (!graph) throw noOnnx(ctx);
  const sig = await signatureOf(ctx, graph.files.model);
  const logits = sig.outputs.find((o) => o.name === "logits");
  const vocab = ctx.config?.vocab_size;
  if (logits && logits.dims.length === 3 && (vocab === undefined || logits.dims[2] === vocab)) {
    return ctx.rec.set(
      "family",
      "sparse",
      `config.json architectures (${arch}) and ${graph.files.model} output logits ` +
        `[${logits.dims.join(", ")}] (a SPLADE-style masked-LM export)`,
    );
  }
  throw new DetectionError(
    graph.files.model,
    "outputs",
    `are ${describe(sig.outputs)}: config.json names ${arch}, but the graph does not output ` +
      "vocabulary logits per token (logits [batch, seq, vocab_size]), so it is not a SPLADE " +
      "export (export the masked-LM head with --task fill-mask)",
    sayIt("family", '"dense"') + " if it is an embedding model",
  );
}
