/**
 * The ONNX graph of a static word-vector model: look every token up in the vector table, then
 * average over the tokens that are attended to AND are real words
 * (`input_ids [B,L]`, `attention_mask [B,L]` → `sentence_embedding [B,D]`).
 */
import { DataType, GraphBuilder, maskedMean } from "@svc/onnx/writer";

/** What the graph is built from. */
export interface StaticGraphSpec {
  /** Graph name, e.g. the catalog id. */
  name: string;
  /** `rows × dims` vectors, row = token id; rows below `firstWordId` must be zero. */
  table: Float32Array;
  rows: number;
  dims: number;
  /** Ids below this one ([UNK], [PAD]) are left out of the mean. */
  firstWordId: number;
  docString: string;
  metadata: Readonly<Record<string, string>>;
}

/** Serialise the lookup-and-mean graph to `.onnx` bytes. */
export function staticEmbeddingGraph(spec: StaticGraphSpec): Uint8Array {
  const g = new GraphBuilder(spec.name);
  const ids = g.input("input_ids", "int64", ["batch", "seq"]);
  const attention = g.input("attention_mask", "int64", ["batch", "seq"]);
  const table = g.initializer("word_vectors", spec.table, [spec.rows, spec.dims]);
  const tokens = g.op("Gather", [table, ids]);
  // Unknown words would otherwise count in the mean and shrink it towards zero; masking them
  // keeps the sentence vector the mean of the words the model knows.
  const isWord = g.op("Greater", [ids, g.constInt64([spec.firstWordId - 1], [])]);
  const mask = g.op("Mul", [attention, g.op("Cast", [isWord], { to: DataType.INT64 })]);
  maskedMean(g, tokens, mask, "sentence_embedding");
  g.output("sentence_embedding", "float32", ["batch", spec.dims]);
  return g.toBytes({ docString: spec.docString, metadata: spec.metadata });
}
