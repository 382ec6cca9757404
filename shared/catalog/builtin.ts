/**
 * The built-in model catalog. Every model file is imported statically: the router runs on Deno
 * Deploy without a filesystem, so nothing here reads files at run time.
 */
import { type ModelConfig, parseModelConfig } from "./schema.ts";
import answerdotaiAnsweraiColbertSmallV1 from "./models/answerdotai_answerai_colbert_small_v1.ts";
import baaiBgeBaseEnV15 from "./models/baai_bge_base_en_v1_5.ts";
import baaiBgeM3 from "./models/baai_bge_m3.ts";
import baaiBgeRerankerBase from "./models/baai_bge_reranker_base.ts";
import baaiBgeSmallEnV15 from "./models/baai_bge_small_en_v1_5.ts";
import colbertIrColbertv20 from "./models/colbert_ir_colbertv2_0.ts";
import intfloatMultilingualE5Small from "./models/intfloat_multilingual_e5_small.ts";
import jinaaiJinaRerankerV1TurboEn from "./models/jinaai_jina_reranker_v1_turbo_en.ts";
import knowledgatorGliclassSmallV10 from "./models/knowledgator_gliclass_small_v1_0.ts";
import mixedbreadAiMxbaiEmbedLargeV1 from "./models/mixedbread_ai_mxbai_embed_large_v1.ts";
import mixedbreadAiMxbaiRerankXsmallV1 from "./models/mixedbread_ai_mxbai_rerank_xsmall_v1.ts";
import moritzlaurerDebertaV3BaseZeroshotV20 from "./models/moritzlaurer_deberta_v3_base_zeroshot_v2_0.ts";
import nomicAiNomicEmbedTextV15 from "./models/nomic_ai_nomic_embed_text_v1_5.ts";
import onnxCommunityGlinerMultitaskLargeV05 from "./models/onnx_community_gliner_multitask_large_v0_5.ts";
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
import xenovaOwlv2BasePatch16Ensemble from "./models/xenova_owlv2_base_patch16_ensemble.ts";
import xenovaOwlvitBasePatch32 from "./models/xenova_owlvit_base_patch32.ts";
import xenovaYolosTiny from "./models/xenova_yolos_tiny.ts";

/** Raw entries with the file they come from (named in validation errors). */
const RAW_ENTRIES: ReadonlyArray<readonly [string, unknown]> = [
  ["models/answerdotai_answerai_colbert_small_v1.ts", answerdotaiAnsweraiColbertSmallV1],
  ["models/baai_bge_base_en_v1_5.ts", baaiBgeBaseEnV15],
  ["models/baai_bge_m3.ts", baaiBgeM3],
  ["models/baai_bge_reranker_base.ts", baaiBgeRerankerBase],
  ["models/baai_bge_small_en_v1_5.ts", baaiBgeSmallEnV15],
  ["models/colbert_ir_colbertv2_0.ts", colbertIrColbertv20],
  ["models/intfloat_multilingual_e5_small.ts", intfloatMultilingualE5Small],
  ["models/jinaai_jina_reranker_v1_turbo_en.ts", jinaaiJinaRerankerV1TurboEn],
  ["models/knowledgator_gliclass_small_v1_0.ts", knowledgatorGliclassSmallV10],
  ["models/mixedbread_ai_mxbai_embed_large_v1.ts", mixedbreadAiMxbaiEmbedLargeV1],
  ["models/mixedbread_ai_mxbai_rerank_xsmall_v1.ts", mixedbreadAiMxbaiRerankXsmallV1],
  ["models/moritzlaurer_deberta_v3_base_zeroshot_v2_0.ts", moritzlaurerDebertaV3BaseZeroshotV20],
  ["models/nomic_ai_nomic_embed_text_v1_5.ts", nomicAiNomicEmbedTextV15],
  ["models/onnx_community_gliner_multitask_large_v0_5.ts", onnxCommunityGlinerMultitaskLargeV05],
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
  ["models/xenova_owlv2_base_patch16_ensemble.ts", xenovaOwlv2BasePatch16Ensemble],
  ["models/xenova_owlvit_base_patch32.ts", xenovaOwlvitBasePatch32],
  ["models/xenova_yolos_tiny.ts", xenovaYolosTiny],
];

/** Every built-in model, validated (defaults applied), in file-name order. */
export const BUILTIN_CATALOG: ModelConfig[] = RAW_ENTRIES.map(([source, raw]) =>
  parseModelConfig(raw, source)
);
