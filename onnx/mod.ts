/**
 * `@svc/onnx`: ONNX model files without the onnx package. Read a graph's declared inputs and
 * outputs from a file without loading it, index a model's nodes and initializers, and rewrite its
 * float initializers in memory (what LoRA merging does). Writing graphs is `@svc/onnx/writer`;
 * both sides share one protobuf wire module and one table of onnx.proto field numbers.
 */
export { type GraphSignature, type GraphValue, readGraphSignature } from "./graph_io.ts";
export {
  elementCount,
  indexOnnxModel,
  type InitializerRef,
  type NodeRef,
  type OnnxIndex,
} from "./model.ts";
export { floatTypeOf, readFloatInitializer, replaceFloatInitializers } from "./initializers.ts";
export { decodeFloats, encodeFloats, type FloatType } from "./float_values.ts";
export { DataType, type DataTypeCode, dataTypeName } from "./schema.ts";
export { ProtoFormatError } from "./protobuf.ts";
