// Own code: no kept-up npm package writes ONNX (onnx-proto pins protobufjs 6, an old major).
/**
 * `@svc/onnx/writer`: build small inference graphs in TypeScript and save them as `.onnx` files
 * (opset 17, IR version 8), without Python or the onnx package. The fixture models and GloVe are
 * built with it.
 *
 * ```ts
 * import { GraphBuilder, maskedMean } from "@svc/onnx/writer";
 * const g = new GraphBuilder("static");
 * const ids = g.input("input_ids", "int64", ["batch", "seq"]);
 * const mask = g.input("attention_mask", "int64", ["batch", "seq"]);
 * const table = g.initializer("embeddings", vectors, [vocab, dim]); // Float32Array
 * const tokens = g.op("Gather", [table, ids]); // [batch, seq, dim]
 * maskedMean(g, tokens, mask, "sentence_embedding");
 * g.output("sentence_embedding", "float32", ["batch", dim]);
 * await Deno.writeFile("model.onnx", g.toBytes());
 * ```
 *
 * Opset-17 reminders: ReduceMean/ReduceMax/ReduceL2 take `axes` as an attribute; ReduceSum,
 * Unsqueeze, Squeeze and Slice take them as an int64 input (use `g.constInt64`).
 */
export {
  type Attrs,
  type AttrValue,
  type ElemType,
  GraphBuilder,
  type ModelOptions,
  type TensorData,
} from "./builder.ts";
export { type QuantizedWeight, quantizePerColumn, WEIGHT_QMAX } from "./quantize.ts";
export { gelu, l2Normalize, layerNorm, linear, maskedMean } from "./blocks.ts";
export { type Dim, encodeModel, type ModelMsg } from "./encode.ts";
export { DataType, type DataTypeCode } from "./schema.ts";
export { ProtoWriter } from "./protobuf.ts";
