/**
 * Which ONNX graph files a repository serves with: `onnx/model.onnx` (transformers.js and
 * sentence-transformers layout) or `model.onnx` (optimum's), their external weights
 * (`model.onnx_data`), a quantised variant next to them for CPU workers (`model_quantized.onnx`,
 * `model_int8.onnx`, …; SVC_FORCE_FP32 keeps the float graph), and CLIP's separate text and vision
 * graphs (`text_model.onnx`, `vision_model.onnx`).
 */
import { DetectionError, OVERRIDE_FILE, REPOSITORY } from "./errors.ts";

/** Folders graphs are looked for in, by preference. */
const FOLDERS = ["onnx/", ""];

/** Quantised variants preferred on CPU, by preference (the AVX-512 VNNI one needs that CPU). */
const QUANTISED = ["quantized", "int8", "uint8", "quint8_avx2"];

/** The graph files chosen, with where the choice came from. */
export interface GraphChoice {
  /** Roles → paths: `model`, and `model_data` / `vision_model` when there are. */
  files: Record<string, string>;
  /** Roles → paths a CPU worker runs instead (quantised variants), when the repository has them. */
  cpu?: Record<string, string>;
  /** How the choice was made, for the detection record. */
  from: string;
}

/** External weights of `graph` (`model.onnx_data` or `model.onnx.data`), when present. */
function externalData(files: ReadonlySet<string>, graph: string): string | undefined {
  return [`${graph}_data`, `${graph}.data`].find((p) => files.has(p));
}

/** `folder/base_<variant>.onnx` for the first quantised variant present. */
function quantised(files: ReadonlySet<string>, folder: string, base: string): string | undefined {
  return QUANTISED.map((q) => `${folder}${base}_${q}.onnx`).find((p) => files.has(p));
}

/** The graph of a single-graph model, or undefined when the repository has no usable one. */
export function singleGraph(files: ReadonlySet<string>): GraphChoice | undefined {
  for (const folder of FOLDERS) {
    const fp32 = `${folder}model.onnx`;
    if (!files.has(fp32)) continue;
    const out: Record<string, string> = { model: fp32 };
    const data = externalData(files, fp32);
    if (data) out.model_data = data;
    const q = quantised(files, folder, "model");
    return {
      files: out,
      ...(q ? { cpu: { model: q } } : {}),
      from: q ? `${fp32}; ${q} on CPU (SVC_FORCE_FP32=1 keeps ${fp32})` : fp32,
    };
  }
  for (const folder of FOLDERS) {
    const q = quantised(files, folder, "model") ??
      [`${folder}model_fp16.onnx`].find((p) => files.has(p));
    if (q) return { files: { model: q }, from: `${q} (the repository's only model graph)` };
  }
  // One graph under another name (e.g. `vespa_colbert.onnx`): it is the model's, whatever its
  // name. Several: the entry must say which.
  const others = [...files].filter((p) =>
    p.endsWith(".onnx") && FOLDERS.some((f) => p.startsWith(f) && !p.slice(f.length).includes("/"))
  );
  if (others.length === 1) {
    return { files: { model: others[0] }, from: `${others[0]} (the repository's only graph)` };
  }
  if (others.length > 1) {
    throw new DetectionError(
      REPOSITORY,
      undefined,
      `holds several ONNX graphs (${others.slice(0, 6).join(", ")}) and none named model.onnx`,
      `Say which one: put {"files": {"model": "${others[0]}"}} in ${OVERRIDE_FILE} next to the` +
        " weights",
    );
  }
  return undefined;
}

/** CLIP's two graphs (`text_model.onnx` and `vision_model.onnx`), or undefined. */
export function splitGraphs(files: ReadonlySet<string>): GraphChoice | undefined {
  for (const folder of FOLDERS) {
    const text = `${folder}text_model.onnx`;
    const vision = `${folder}vision_model.onnx`;
    if (!files.has(text) || !files.has(vision)) continue;
    const qt = quantised(files, folder, "text_model");
    const qv = quantised(files, folder, "vision_model");
    const both = qt !== undefined && qv !== undefined;
    return {
      files: { model: text, vision_model: vision },
      ...(both ? { cpu: { model: qt, vision_model: qv } } : {}),
      from: both
        ? `${text} + ${vision}; ${qt} + ${qv} on CPU (SVC_FORCE_FP32=1 keeps the float graphs)`
        : `${text} + ${vision}`,
    };
  }
  return undefined;
}

/** True when the repository holds PyTorch or safetensors weights (a checkpoint, not an export). */
export function hasCheckpointWeights(files: ReadonlySet<string>): string | undefined {
  return ["model.safetensors", "pytorch_model.bin", "model.safetensors.index.json"]
    .find((p) => files.has(p));
}
