/** Reading an ONNX model's graph and rewriting its float initializers, in memory. */
export {
  dataTypeName,
  elementCount,
  indexOnnxModel,
  type InitializerRef,
  type NodeRef,
  OnnxDataType,
  type OnnxIndex,
} from "./model.ts";
export { floatTypeOf, readFloatInitializer, replaceFloatInitializers } from "./initializers.ts";
export { decodeFloats, encodeFloats, type FloatType } from "./float_values.ts";
export { ProtoFormatError } from "./protobuf.ts";
