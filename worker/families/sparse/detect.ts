/**
 * Detecting a sparse (SPLADE) encoder's width: the vocabulary size, from sentence-transformers,
 * config.json or the graph's logits.
 */
import type { ModelConfigInput } from "@svc/shared/catalog/schema";
import { type Ctx, signatureOf } from "../../catalog/detect/context.ts";
import { DetectionError, sayIt } from "../../catalog/detect/errors.ts";
import type { GraphChoice } from "../../catalog/detect/onnx_files.ts";

/** The sparse vectors' dimension, and where it came from. */
export async function configureSparse(
  ctx: Ctx,
  graphs: GraphChoice,
  out: ModelConfigInput,
): Promise<void> {
  const { rec, config } = ctx;
  const given = rec.given<Record<string, number>>("dims");
  let vocab = given?.sparse ?? ctx.st?.dims?.value;
  let from = ctx.st?.dims?.from;
  if (vocab === undefined && typeof config?.vocab_size === "number") {
    vocab = config.vocab_size;
    from = "config.json vocab_size";
  }
  if (vocab === undefined) {
    const logits = (await signatureOf(ctx, graphs.files.model)).outputs
      .find((o) => o.name === "logits");
    if (typeof logits?.dims[2] === "number") {
      vocab = logits.dims[2];
      from = `${graphs.files.model} output logits`;
    }
  }
  if (vocab === undefined) {
    throw new DetectionError(
      "config.json",
      "vocab_size",
      "is missing, so the sparse vectors' dimension is unknown",
      sayIt("dims", '{"sparse": 30522}', false),
    );
  }
  if (!given) rec.set("dims", { sparse: vocab }, from!);
  out.dims = { sparse: vocab };
}
