/**
 * Detecting a dense encoder's settings from its files: pooling, normalisation, width, prompts;
 * the graph says whether it pools itself.
 */
import type { ModelConfigInput, Pooling } from "@svc/shared/catalog/schema";
import { type Ctx, describe, localSignature, signatureOf } from "../../catalog/detect/context.ts";
import { DetectionError, sayIt } from "../../catalog/detect/errors.ts";

/** Dense: pooling, normalisation, width; the graph says whether it pools itself. */
export async function configureDense(
  ctx: Ctx,
  modelFile: string,
  out: ModelConfigInput,
): Promise<void> {
  const { rec, st, config } = ctx;
  const givenPooling = rec.given<Pooling>("pooling");
  const needGraph = givenPooling === undefined && st?.pooling === undefined;
  const sig = needGraph || st?.denseModule
    ? await signatureOf(ctx, modelFile)
    : await localSignature(ctx, modelFile);
  const pooled = sig?.outputs.find((o) =>
    (o.name === "sentence_embedding" || o.name === "embeddings") && o.dims.length === 2
  );
  const perToken = sig?.outputs.find((o) => o.name === "last_hidden_state");
  if (sig && !pooled && !perToken) {
    throw new DetectionError(
      modelFile,
      "outputs",
      `are ${describe(sig.outputs)}; a dense encoder outputs last_hidden_state [batch, seq, ` +
        "hidden] (or a pooled sentence_embedding [batch, dims])",
      "Export the model with --task feature-extraction",
    );
  }
  // A graph that outputs a pooled vector is used as it is: its own pooling wins.
  const graphPools = pooled !== undefined && perToken === undefined;
  if (st?.denseModule && !graphPools) {
    throw new DetectionError(
      "modules.json",
      undefined,
      `lists a Dense projection (${st.denseModule}) after pooling, which ${modelFile} does not ` +
        `contain (its outputs: ${describe(sig!.outputs)})`,
      "Export the whole sentence-transformers pipeline so the graph outputs sentence_embedding",
    );
  }
  if (givenPooling !== undefined) out.pooling = givenPooling;
  else if (graphPools) {
    out.pooling = rec.set(
      "pooling",
      "none",
      `${modelFile} output ${pooled!.name} (the graph pools)`,
    );
  } else if (st?.pooling) {
    out.pooling = rec.set("pooling", st.pooling.value, st.pooling.from);
  } else {
    throw new DetectionError(
      "1_Pooling/config.json",
      undefined,
      `is missing (no sentence-transformers modules.json), and ${modelFile} outputs token ` +
        "vectors, so nothing says how to pool them (CLS or mean)",
      sayIt("pooling", '"mean"'),
    );
  }
  const givenNormalize = rec.given<boolean>("normalize");
  if (givenNormalize !== undefined) out.normalize = givenNormalize;
  else if (st) out.normalize = rec.set("normalize", st.normalize.value, st.normalize.from);
  else {
    out.normalize = rec.set(
      "normalize",
      true,
      "default: no modules.json says otherwise (vectors are L2-normalised)",
    );
  }
  const given = rec.given<Record<string, number>>("dims");
  const graphWidth = (pooled ?? perToken)?.dims.at(-1);
  if (given) {
    out.dims = given;
  } else if (st?.dims) {
    if (typeof graphWidth === "number" && graphWidth !== st.dims.value && !st.denseModule) {
      throw new DetectionError(
        st.dims.from.split(" ")[0],
        "word_embedding_dimension",
        `is ${st.dims.value} but ${modelFile} outputs vectors of ${graphWidth}`,
        sayIt("dims", `{"dense": ${graphWidth}}`, false),
      );
    }
    out.dims = rec.set("dims", { dense: st.dims.value }, st.dims.from);
  } else if (typeof graphWidth === "number") {
    out.dims = rec.set(
      "dims",
      { dense: graphWidth },
      `${modelFile} output ${(pooled ?? perToken)!.name}`,
    );
  } else if (typeof config?.hidden_size === "number") {
    out.dims = rec.set("dims", { dense: config.hidden_size }, "config.json hidden_size");
  } else {
    throw new DetectionError(
      "config.json",
      "hidden_size",
      "is missing, so the embedding width is unknown",
      sayIt("dims", '{"dense": 768}', false),
    );
  }
  if (st?.prompts && rec.overrides.values.prompts === undefined) {
    out.prompts = rec.set("prompts", st.prompts.value, st.prompts.from);
  }
  if (st?.defaultInputType && rec.overrides.values.default_input_type === undefined) {
    out.default_input_type = rec.set(
      "default_input_type",
      st.defaultInputType.value,
      st.defaultInputType.from,
    );
  }
}
