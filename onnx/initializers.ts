/**
 * Reading and replacing the values of float initializers in an indexed ONNX model. A replacement
 * keeps the initializer's name, type, shape and other fields, and stores the new values as
 * raw_data; the result is a new model in memory (one copy of the file's bytes), the input is
 * left untouched.
 */
import { decodeFloats, encodeFloats, type FloatType } from "./float_values.ts";
import { elementCount, type InitializerRef, isTensorValueField, type OnnxIndex } from "./model.ts";
import { lengthPrefix, protoFields } from "./protobuf.ts";
import { DataType, dataTypeName, GraphField, ModelField, TensorField } from "./schema.ts";

/** The float type of an initializer, undefined when it is not float32/float16/bfloat16. */
export function floatTypeOf(t: InitializerRef): FloatType | undefined {
  switch (t.dataType) {
    case DataType.FLOAT:
      return "float32";
    case DataType.FLOAT16:
      return "float16";
    case DataType.BFLOAT16:
      return "bfloat16";
  }
  return undefined;
}

/** The values of a float initializer as float32 (a copy). */
export function readFloatInitializer(index: OnnxIndex, t: InitializerRef): Float32Array {
  const type = floatTypeOf(t);
  if (!type) throw new Error(`initializer '${t.name}' is ${dataTypeName(t.dataType)}, not float`);
  const count = elementCount(t.dims);
  const data = t.data;
  switch (data.kind) {
    case "raw":
      return decodeFloats(index.bytes.subarray(data.start, data.end), type, count);
    case "float_data": {
      // float_data holds float32 values only (float16 goes to int32_data), 4 bytes each.
      if (type !== "float32") break;
      const parts = data.ranges.map((r) => index.bytes.subarray(r.start, r.end));
      const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        all.set(p, at);
        at += p.length;
      }
      return decodeFloats(all, "float32", count);
    }
    case "external":
      throw new Error(`initializer '${t.name}' is stored in an external data file`);
  }
  throw new Error(
    `initializer '${t.name}' stores its values in a layout this reader does not read`,
  );
}

/**
 * A new model whose initializers named in `values` hold those values (float32 in, stored in each
 * initializer's own float type). Every name must exist and every length match its shape.
 */
export function replaceFloatInitializers(
  index: OnnxIndex,
  values: ReadonlyMap<string, Float32Array>,
): Uint8Array {
  const { bytes, graph } = index;
  const targets: { ref: InitializerRef; field: Uint8Array[] }[] = [];
  for (const [name, v] of values) {
    const ref = index.initializers.get(name);
    if (!ref) throw new Error(`no initializer '${name}' in the model`);
    const type = floatTypeOf(ref);
    if (!type) throw new Error(`initializer '${name}' is ${dataTypeName(ref.dataType)}, not float`);
    if (v.length !== elementCount(ref.dims)) {
      throw new Error(`initializer '${name}' [${ref.dims}] cannot take ${v.length} values`);
    }
    targets.push({ ref, field: rewrittenTensorField(bytes, ref, encodeFloats(v, type)) });
  }
  targets.sort((a, b) => a.ref.fieldStart - b.ref.fieldStart);

  // The graph body: original bytes with each replaced initializer field swapped for its new one.
  const pieces: Uint8Array[] = [];
  let at = graph.bodyStart;
  for (const t of targets) {
    pieces.push(bytes.subarray(at, t.ref.fieldStart), ...t.field);
    at = t.ref.fieldEnd;
  }
  pieces.push(bytes.subarray(at, graph.bodyEnd));
  const bodyLength = pieces.reduce((n, p) => n + p.length, 0);
  return concat([
    bytes.subarray(0, graph.fieldStart),
    lengthPrefix(ModelField.GRAPH, bodyLength),
    ...pieces,
    bytes.subarray(graph.bodyEnd),
  ]);
}

/** The initializer field re-encoded: every field but the values, then the new raw_data. */
function rewrittenTensorField(bytes: Uint8Array, ref: InitializerRef, raw: Uint8Array) {
  const kept: Uint8Array[] = [];
  for (const f of protoFields(bytes, ref.bodyStart, ref.bodyEnd)) {
    if (!isTensorValueField(f.field)) kept.push(bytes.subarray(f.tagStart, f.end));
  }
  const rawPrefix = lengthPrefix(TensorField.RAW_DATA, raw.length);
  const bodyLength = kept.reduce((n, p) => n + p.length, 0) + rawPrefix.length + raw.length;
  return [lengthPrefix(GraphField.INITIALIZER, bodyLength), ...kept, rawPrefix, raw];
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
