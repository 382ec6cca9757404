// Own code: no maintained npm package reads safetensors; the format is an 8-byte length, a JSON
// header and raw little-endian tensors, and a reader that bounds every size is short.
/**
 * A safetensors reader: `u64 LE header length N`, `N` bytes of JSON header (`name → {dtype,
 * shape, data_offsets}` plus an optional `__metadata__` map of strings), then the tensors' bytes.
 * The header is checked as the format requires (offsets cover the data exactly, without holes or
 * overlaps; each tensor's byte length is its element count times its dtype size) and bounded
 * (header bytes, tensor count), so a hostile file is refused before anything big is allocated.
 */
import { decodeFloats } from "@svc/onnx";

/** The file is not a valid (or not an acceptable) safetensors file. */
export class SafetensorsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SafetensorsError";
  }
}

/** Bounds applied while reading a header. */
export interface SafetensorsLimits {
  /** Largest JSON header accepted, in bytes. */
  maxHeaderBytes: number;
  /** Most tensors accepted in one file. */
  maxTensors: number;
}

/** Defaults: LoRA adapters hold a few hundred tensors and headers of tens of kilobytes. */
export const DEFAULT_SAFETENSORS_LIMITS: SafetensorsLimits = {
  maxHeaderBytes: 1024 * 1024,
  maxTensors: 16_384,
};

/** Bytes per element of every dtype the format defines. */
const DTYPE_SIZE: Record<string, number> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
};

/** One tensor: its dtype, shape and byte range in the file (absolute offsets). */
export interface SafetensorsTensor {
  name: string;
  dtype: string;
  shape: number[];
  start: number;
  end: number;
}

/** A parsed header. */
export interface SafetensorsHeader {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
  /** Offset of the first tensor byte (8 + header length). */
  dataStart: number;
}

const MAX_RANK = 8;

/** Parse and check the header of a safetensors file of `fileSize` bytes starting with `head`. */
export function parseSafetensorsHeader(
  head: Uint8Array,
  fileSize: number,
  limits: SafetensorsLimits = DEFAULT_SAFETENSORS_LIMITS,
): SafetensorsHeader {
  const headerLength = headerLengthOf(head, fileSize, limits);
  if (head.length < 8 + headerLength) {
    throw new SafetensorsError("the header was not read in full");
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(
      head.subarray(8, 8 + headerLength),
    ));
  } catch (err) {
    throw new SafetensorsError(`the header is not UTF-8 JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new SafetensorsError("the header is not a JSON object");
  }
  const dataStart = 8 + headerLength;
  const dataLength = fileSize - dataStart;
  const tensors = new Map<string, SafetensorsTensor>();
  let metadata: Record<string, string> = {};
  const entries = Object.entries(json as Record<string, unknown>);
  const count = entries.length - (Object.hasOwn(json, "__metadata__") ? 1 : 0);
  if (count > limits.maxTensors) {
    throw new SafetensorsError(`more than ${limits.maxTensors} tensors`);
  }
  for (const [name, value] of entries) {
    if (name === "__metadata__") {
      metadata = readMetadata(value);
      continue;
    }
    const t = readTensorEntry(name, value, dataLength);
    tensors.set(name, { ...t, start: dataStart + t.start, end: dataStart + t.end });
  }
  checkCoverage([...tensors.values()], dataStart, fileSize);
  return { tensors, metadata, dataStart };
}

/** The declared header length, checked against the limits and the file size. */
function headerLengthOf(head: Uint8Array, fileSize: number, limits: SafetensorsLimits): number {
  if (fileSize < 8 || head.length < 8) throw new SafetensorsError("shorter than 8 bytes");
  const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(limits.maxHeaderBytes)) {
    throw new SafetensorsError(
      `header of ${n} bytes exceeds the limit of ${limits.maxHeaderBytes} bytes`,
    );
  }
  const length = Number(n);
  if (8 + length > fileSize) throw new SafetensorsError("header runs past the end of the file");
  return length;
}

function readMetadata(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SafetensorsError("__metadata__ is not an object");
  }
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string") throw new SafetensorsError(`__metadata__.${k} is not a string`);
  }
  return value as Record<string, string>;
}

function readTensorEntry(name: string, value: unknown, dataLength: number) {
  const bad = (why: string) => new SafetensorsError(`tensor '${name}': ${why}`);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad("entry is not an object");
  }
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (typeof dtype !== "string" || !(dtype in DTYPE_SIZE)) {
    throw bad(`unknown dtype ${JSON.stringify(dtype)}`);
  }
  if (!Array.isArray(shape) || shape.length > MAX_RANK || !shape.every(isCount)) {
    throw bad("shape must be a list of at most 8 non-negative integers");
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
    throw bad("data_offsets must be two non-negative integers");
  }
  const [start, end] = offsets as number[];
  if (start > end || end > dataLength) throw bad(`data_offsets [${start}, ${end}] out of range`);
  // Element count checked against the bytes it claims, so a huge shape never overflows.
  let elements = 1;
  for (const d of shape as number[]) {
    elements *= d;
    if (elements * DTYPE_SIZE[dtype] > dataLength) throw bad("shape larger than the file's data");
  }
  if (end - start !== elements * DTYPE_SIZE[dtype]) {
    throw bad(`${end - start} bytes do not hold shape [${shape}] of ${dtype}`);
  }
  return { name, dtype, shape: shape as number[], start, end };
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** The format requires the tensors to cover the data exactly: no hole, no overlap. */
function checkCoverage(tensors: SafetensorsTensor[], dataStart: number, fileSize: number): void {
  const sorted = [...tensors].sort((a, b) => a.start - b.start || a.end - b.end);
  let at = dataStart;
  for (const t of sorted) {
    if (t.start !== at) {
      throw new SafetensorsError(
        t.start < at ? `tensor '${t.name}' overlaps another` : `a hole before tensor '${t.name}'`,
      );
    }
    at = t.end;
  }
  if (at !== fileSize) throw new SafetensorsError("the tensors do not cover the file's data");
}

/** Read and check only the header of the safetensors file at `path`. */
export async function readSafetensorsHeader(
  path: string,
  limits: SafetensorsLimits = DEFAULT_SAFETENSORS_LIMITS,
): Promise<SafetensorsHeader> {
  using file = await Deno.open(path, { read: true });
  const { size } = await file.stat();
  const lengthBytes = await readExactly(file, Math.min(8, size));
  const headerLength = headerLengthOf(lengthBytes, size, limits);
  const head = new Uint8Array(8 + headerLength);
  head.set(lengthBytes);
  head.set(await readExactly(file, headerLength), 8);
  return parseSafetensorsHeader(head, size, limits);
}

async function readExactly(file: Deno.FsFile, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let at = 0;
  while (at < n) {
    const got = await file.read(out.subarray(at));
    if (got === null) throw new SafetensorsError("the file ended early");
    at += got;
  }
  return out;
}

/** Float element types this reader converts to float32. */
const FLOAT_DTYPES = { F32: "float32", F16: "float16", BF16: "bfloat16" } as const;

/** The values of a float tensor (F32, F16, BF16, F64) as float32, from the whole file's bytes. */
export function tensorFloat32(file: Uint8Array, t: SafetensorsTensor): Float32Array {
  const bytes = file.subarray(t.start, t.end);
  const count = t.shape.reduce((a, b) => a * b, 1);
  if (t.dtype === "F64") {
    const own = bytes.slice();
    const view = new DataView(own.buffer);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = view.getFloat64(i * 8, true);
    return out;
  }
  const type = FLOAT_DTYPES[t.dtype as keyof typeof FLOAT_DTYPES];
  if (!type) throw new SafetensorsError(`tensor '${t.name}' is ${t.dtype}, not a float type`);
  return decodeFloats(bytes, type, count);
}

/** True when the reader converts this dtype to float32. */
export function isFloatDtype(dtype: string): boolean {
  return dtype === "F64" || dtype in FLOAT_DTYPES;
}
