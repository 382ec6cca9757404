/**
 * The built-in model catalog. Every model file is imported statically: the router runs on Deno
 * Deploy without a filesystem, so nothing here reads files at run time.
 *
 * Served names: a model is served under its id; each non-default profile is also served as
 * `id:profile` (e.g. `nomic-ai/nomic-embed-text-v1.5:matryoshka-256`).
 */
import { type ModelConfig, parseModelConfig } from "./schema.ts";
import answerdotaiAnsweraiColbertSmallV1 from "./models/answerdotai_answerai_colbert_small_v1.ts";
import baaiBgeBaseEnV15 from "./models/baai_bge_base_en_v1_5.ts";
import baaiBgeRerankerBase from "./models/baai_bge_reranker_base.ts";
import baaiBgeSmallEnV15 from "./models/baai_bge_small_en_v1_5.ts";
import colbertIrColbertv20 from "./models/colbert_ir_colbertv2_0.ts";
import intfloatMultilingualE5Small from "./models/intfloat_multilingual_e5_small.ts";
import jinaaiJinaRerankerV1TurboEn from "./models/jinaai_jina_reranker_v1_turbo_en.ts";
import mixedbreadAiMxbaiEmbedLargeV1 from "./models/mixedbread_ai_mxbai_embed_large_v1.ts";
import mixedbreadAiMxbaiRerankXsmallV1 from "./models/mixedbread_ai_mxbai_rerank_xsmall_v1.ts";
import nomicAiNomicEmbedTextV15 from "./models/nomic_ai_nomic_embed_text_v1_5.ts";
import onnxCommunityGlinerMultiV21 from "./models/onnx_community_gliner_multi_v2_1.ts";
import onnxCommunityGlinerSmallV21 from "./models/onnx_community_gliner_small_v2_1.ts";
import qdrantSpladePpEnV1 from "./models/qdrant_splade_pp_en_v1.ts";
import sentenceTransformersAllMinilmL6V2 from "./models/sentence_transformers_all_minilm_l6_v2.ts";
import xenovaBertBaseNer from "./models/xenova_bert_base_ner.ts";
import xenovaClipVitBasePatch32 from "./models/xenova_clip_vit_base_patch32.ts";
import xenovaDetrResnet50 from "./models/xenova_detr_resnet_50.ts";
import xenovaE5SmallV2 from "./models/xenova_e5_small_v2.ts";
import xenovaJinaEmbeddingsV2SmallEn from "./models/xenova_jina_embeddings_v2_small_en.ts";
import xenovaMobilebertUncasedMnli from "./models/xenova_mobilebert_uncased_mnli.ts";
import xenovaMsMarcoMinilmL12V2 from "./models/xenova_ms_marco_minilm_l_12_v2.ts";
import xenovaMsMarcoMinilmL6V2 from "./models/xenova_ms_marco_minilm_l_6_v2.ts";

/** Raw entries with the file they come from (named in validation errors). */
const RAW_ENTRIES: ReadonlyArray<readonly [string, unknown]> = [
  ["models/answerdotai_answerai_colbert_small_v1.ts", answerdotaiAnsweraiColbertSmallV1],
  ["models/baai_bge_base_en_v1_5.ts", baaiBgeBaseEnV15],
  ["models/baai_bge_reranker_base.ts", baaiBgeRerankerBase],
  ["models/baai_bge_small_en_v1_5.ts", baaiBgeSmallEnV15],
  ["models/colbert_ir_colbertv2_0.ts", colbertIrColbertv20],
  ["models/intfloat_multilingual_e5_small.ts", intfloatMultilingualE5Small],
  ["models/jinaai_jina_reranker_v1_turbo_en.ts", jinaaiJinaRerankerV1TurboEn],
  ["models/mixedbread_ai_mxbai_embed_large_v1.ts", mixedbreadAiMxbaiEmbedLargeV1],
  ["models/mixedbread_ai_mxbai_rerank_xsmall_v1.ts", mixedbreadAiMxbaiRerankXsmallV1],
  ["models/nomic_ai_nomic_embed_text_v1_5.ts", nomicAiNomicEmbedTextV15],
  ["models/onnx_community_gliner_multi_v2_1.ts", onnxCommunityGlinerMultiV21],
  ["models/onnx_community_gliner_small_v2_1.ts", onnxCommunityGlinerSmallV21],
  ["models/qdrant_splade_pp_en_v1.ts", qdrantSpladePpEnV1],
  ["models/sentence_transformers_all_minilm_l6_v2.ts", sentenceTransformersAllMinilmL6V2],
  ["models/xenova_bert_base_ner.ts", xenovaBertBaseNer],
  ["models/xenova_clip_vit_base_patch32.ts", xenovaClipVitBasePatch32],
  ["models/xenova_detr_resnet_50.ts", xenovaDetrResnet50],
  ["models/xenova_e5_small_v2.ts", xenovaE5SmallV2],
  ["models/xenova_jina_embeddings_v2_small_en.ts", xenovaJinaEmbeddingsV2SmallEn],
  ["models/xenova_mobilebert_uncased_mnli.ts", xenovaMobilebertUncasedMnli],
  ["models/xenova_ms_marco_minilm_l_12_v2.ts", xenovaMsMarcoMinilmL12V2],
  ["models/xenova_ms_marco_minilm_l_6_v2.ts", xenovaMsMarcoMinilmL6V2],
];

/** Every built-in model, validated (defaults applied), in file-name order. */
export const BUILTIN_CATALOG: ModelConfig[] = RAW_ENTRIES.map(([source, raw]) =>
  parseModelConfig(raw, source)
);

/** Index configs by id. Throws when two configs share an id. */
export function catalogById(configs: readonly ModelConfig[]): Map<string, ModelConfig> {
  const byId = new Map<string, ModelConfig>();
  for (const c of configs) {
    if (byId.has(c.id)) throw new Error(`duplicate model id in catalog: ${c.id}`);
    byId.set(c.id, c);
  }
  return byId;
}

/** Name of the model's default profile, or undefined when it declares none. */
export function defaultProfileName(config: ModelConfig): string | undefined {
  for (const [name, p] of Object.entries(config.profiles)) if (p.is_default) return name;
  return undefined;
}

/** Names one model is served under: its id, then `id:profile` for each non-default profile. */
export function servedNamesOf(config: ModelConfig): string[] {
  const names = [config.id];
  for (const [name, p] of Object.entries(config.profiles)) {
    if (!p.is_default) names.push(`${config.id}:${name}`);
  }
  return names;
}

/** Every served name of the given configs, in catalog order. */
export function expandProfiles(configs: readonly ModelConfig[]): string[] {
  return configs.flatMap(servedNamesOf);
}

/** A served name resolved to its model and profile. */
export interface ServedModel {
  config: ModelConfig;
  /** Profile name; for a plain id the default profile (or "default" when none is declared). */
  profile: string;
}

/**
 * Resolve a served name (already percent-decoded by the caller). A plain id gives its default
 * profile; otherwise the name is split on its LAST `:` and accepted only when the part after it
 * is one of that model's profiles. Anything else gives undefined.
 */
export function resolveServedName(
  name: string,
  byId: ReadonlyMap<string, ModelConfig>,
): ServedModel | undefined {
  const exact = byId.get(name);
  if (exact) return { config: exact, profile: defaultProfileName(exact) ?? "default" };
  const colon = name.lastIndexOf(":");
  if (colon <= 0) return undefined;
  const config = byId.get(name.slice(0, colon));
  const profile = name.slice(colon + 1);
  if (!config || !Object.hasOwn(config.profiles, profile)) return undefined;
  return { config, profile };
}
