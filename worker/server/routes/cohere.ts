/**
 * Cohere's rerank and embed (`POST /v1|v2/rerank`, `/v1|v2/embed`), so that the `cohere-ai` SDK
 * and the frameworks that speak Cohere's API (LangChain, LlamaIndex, Haystack, Dify) work
 * unchanged. They are thin views of the native operations: rerank runs what `/v1/score` runs (a
 * cross-encoder's score, or the cosine of an encode model's embeddings) and embed what
 * `/v1/encode` runs, with the same quantisation per embedding type as `output_dtype`. Always
 * JSON, never a 202 (the SDK takes any 2xx as success).
 */
import { base64ToBytes, float32ToBase64 } from "@svc/shared/codec/base64";
import { makeDenseVector } from "@svc/shared/codec/output_dtype";
import { invalidInput } from "@svc/shared/errors";
import type { DirectAnswer } from "@svc/shared/http/direct_call";
import {
  type CohereEmbeddingType,
  type CohereEmbedRequest,
  CohereEmbedRequestSchema,
  type CohereEmbedResponse,
  type CohereInputType,
  type CohereMeta,
  CohereRerankRequestSchema,
  type CohereRerankResponse,
} from "@svc/shared/schemas/cohere";
import type { OutputDtype } from "@svc/shared/schemas/encode";
import type { ImageFormat, Item } from "@svc/shared/schemas/item";
import { truncateDense } from "../../service/matryoshka.ts";
import { checkDimensions, planEncode } from "../../service/params.ts";
import { prepareWork } from "../../service/inputs.ts";
import type { WorkerContext } from "../context.ts";
import type { ModelCall } from "../model_call.ts";
import { answerJson, openBodyModelRequest, runOnModel } from "../model_request.ts";
import { rankOrder, scoreItems } from "./score.ts";

/** Cohere's API version a route answers as (its `meta.api_version`). */
export type CohereVersion = 1 | 2;

/** `meta` of an answer: the API version answered and what the request used. */
function meta(version: CohereVersion, billed: CohereMeta["billed_units"]): CohereMeta {
  return { api_version: { version: String(version) }, billed_units: billed };
}

/** `POST /v1/rerank`, `/v2/rerank`. */
export async function handleCohereRerank(
  ctx: WorkerContext,
  call: ModelCall,
  version: CohereVersion,
): Promise<DirectAnswer> {
  const mr = await openBodyModelRequest(ctx, call, "score", CohereRerankRequestSchema);
  const { served, body } = mr;
  const fields = body.rank_fields;
  if (fields !== undefined && fields.some((f) => f !== "text")) {
    throw invalidInput(
      "rank_fields: only the documents' `text` is ranked; put the fields to rank on into it " +
        "(e.g. as YAML lines)",
    );
  }
  const items: Item[] = body.documents.map((d) => ({ text: typeof d === "string" ? d : d.text }));
  const { scores, result } = await scoreItems(ctx, served, call, {
    query: { text: body.query },
    items,
    maxItemTokens: body.max_tokens_per_doc,
  });
  const order = rankOrder(scores).slice(0, body.top_n ?? scores.length);
  const results = order.map((index) => {
    const d = body.documents[index];
    return {
      index,
      relevance_score: scores[index],
      ...(body.return_documents ? { document: typeof d === "string" ? { text: d } : d } : {}),
    };
  });
  const answer: CohereRerankResponse = {
    id: mr.traceId,
    results,
    meta: meta(version, { search_units: 1 }),
  };
  return answerJson(mr, result, answer);
}

/** Cohere's input types as the catalog's prompts: none means /v1/encode's default. */
const INPUT_TYPES: Record<CohereInputType, "query" | "document" | undefined> = {
  search_query: "query",
  search_document: "document",
  classification: undefined,
  clustering: undefined,
  image: undefined,
};

/** `/v1/encode` output dtypes of Cohere's integer embedding types. */
const DTYPES: Partial<Record<CohereEmbeddingType, OutputDtype>> = {
  int8: "int8",
  uint8: "uint8",
  binary: "binary",
  ubinary: "ubinary",
};

/** One embedding in one Cohere type. */
function embeddingAs(type: CohereEmbeddingType, v: Float32Array): number[] | string {
  if (type === "float") return Array.from(v);
  if (type === "base64") return float32ToBase64(v);
  const values = makeDenseVector(v, DTYPES[type]).values as Int8Array | Uint8Array;
  // Cohere's `binary` is the same packed bits as signed bytes: each `ubinary` byte minus 128.
  return type === "binary" ? Array.from(values, (b) => b - 128) : Array.from(values);
}

/** `POST /v1/embed`, `/v2/embed`. */
export async function handleCohereEmbed(
  ctx: WorkerContext,
  call: ModelCall,
  version: CohereVersion,
): Promise<DirectAnswer> {
  const mr = await openBodyModelRequest(ctx, call, "encode", CohereEmbedRequestSchema);
  const { served, body } = mr;
  const config = served.config;
  if (!config.outputs.includes("dense")) {
    throw invalidInput(`model '${config.id}' has no dense output; embed needs one`);
  }
  const items = embedItems(body);
  const dims = body.output_dimension === undefined
    ? undefined
    : checkDimensions(config, body.output_dimension, "output_dimension");
  const inputType = body.input_type === undefined ? undefined : INPUT_TYPES[body.input_type];
  const plan = planEncode(served, {
    output_types: ["dense"],
    options: inputType ? { input_type: inputType } : undefined,
  });
  plan.params.maxTokens = body.max_tokens;
  if (body.truncate === "START") plan.params.truncate = "start";
  if (body.truncate === "NONE") plan.params.truncate = "none";
  const { work, imageMs } = await prepareWork(
    ctx.images,
    served,
    items,
    call.signal,
    (i) =>
      body.inputs?.length ? `inputs[${i}]` : body.images?.length ? `images[${i}]` : `texts[${i}]`,
  );
  const result = await runOnModel(ctx, served, call, work, plan.params);
  result.timing.tokenizationMs += imageMs;
  const t0 = performance.now();
  const vectors = result.outputs.map((o) =>
    dims ? truncateDense(o.dense!, dims, config) : o.dense!
  );
  const types = body.embedding_types ?? ["float"];
  const byType: CohereEmbedResponse["embeddings"] = {};
  for (const type of types) {
    byType[type] = vectors.map((v) => embeddingAs(type, v)) as number[][] | string[];
  }
  result.timing.postprocessingMs += performance.now() - t0;
  // v1 without embedding_types answers plain float lists, as Cohere's v1 does.
  const floats = version === 1 && body.embedding_types === undefined;
  const answer: CohereEmbedResponse = {
    id: mr.traceId,
    response_type: floats ? "embeddings_floats" : "embeddings_by_type",
    embeddings: floats ? byType.float as number[][] : byType,
    texts: body.texts ?? [],
    meta: meta(version, { input_tokens: result.tokens }),
  };
  return answerJson(mr, result, answer);
}

/**
 * The request's texts, images or inputs as items; exactly one of the three lists is sent. An
 * input's parts make one item: its texts joined by newlines, its images beside them (a model
 * that takes no images answers 400 for one, naming the input).
 */
function embedItems(body: CohereEmbedRequest): Item[] {
  const texts = body.texts ?? [];
  const images = body.images ?? [];
  const inputs = body.inputs ?? [];
  const sent = [texts, images, inputs].filter((l) => l.length > 0).length;
  if (sent > 1) throw invalidInput("send one of texts, images or inputs, not several");
  if (sent === 0) throw invalidInput("texts, images or inputs must list at least one input");
  if (body.input_type === "image" && texts.length > 0) {
    throw invalidInput("input_type 'image' goes with images (or inputs), not texts");
  }
  if (texts.length > 0) return texts.map((text) => ({ text }));
  if (images.length > 0) return images.map((uri, i) => ({ images: [imageOfDataUri(uri, i)] }));
  return inputs.map((input, i) => {
    const parts = input.content;
    const words = parts.flatMap((p) => p.type === "text" ? [p.text] : []);
    const pictures = parts.flatMap((p, j) =>
      p.type === "image_url" ? [imageOfDataUri(p.image_url.url, i, `.content[${j}]`)] : []
    );
    return {
      ...(words.length > 0 ? { text: words.join("\n") } : {}),
      ...(pictures.length > 0 ? { images: pictures } : {}),
    };
  });
}

/** Formats a data URI may name, as the image formats of the native API. */
const DATA_URI_FORMATS: Record<string, ImageFormat> = {
  "image/jpeg": "jpeg",
  "image/jpg": "jpeg",
  "image/png": "png",
  "image/webp": "webp",
};

/** One `data:image/...;base64,` URI as image bytes with their format (`at`: within inputs[i]). */
function imageOfDataUri(
  uri: string,
  i: number,
  at?: string,
): { data: Uint8Array; format: ImageFormat } {
  const name = at === undefined ? `images[${i}]` : `inputs[${i}]${at}.image_url.url`;
  const m = /^data:([\w.+-]+\/[\w.+-]+)(?:;[^,;]*)*;base64,/i.exec(uri);
  const format = m ? DATA_URI_FORMATS[m[1].toLowerCase()] : undefined;
  if (!m || !format) {
    throw invalidInput(
      `${name} must be a data URI of a JPEG, PNG or WebP image ` +
        `(data:image/png;base64,...)`,
    );
  }
  const data = base64ToBytes(uri.slice(m[0].length));
  if (data === null) throw invalidInput(`${name} is not valid base64`);
  if (data.length === 0) throw invalidInput(`${name} holds no image data`);
  return { data, format };
}
