/**
 * A models directory holding the fixture catalog plus variants of fixture entries (same weights,
 * other family options), for tests that compare one setting against another.
 */
import { join } from "node:path";
import { ensureFixtures } from "@svc/fixture-models";

/** A temp models dir: every fixture entry plus `variants` (id → changes on top of `base`). */
export async function variantModelsDir(
  variants: { id: string; base: string; change: (entry: Record<string, unknown>) => void }[],
): Promise<string> {
  const fx = await ensureFixtures();
  const dir = await Deno.makeTempDir({ prefix: "svc-models-" });
  for await (const e of Deno.readDir(join(fx, "models"))) {
    if (e.isFile) await Deno.copyFile(join(fx, "models", e.name), join(dir, e.name));
  }
  for (const v of variants) {
    const baseFile = v.base.replace(/^fixture\//, "") + ".json";
    const entry = JSON.parse(await Deno.readTextFile(join(fx, "models", baseFile)));
    entry.id = v.id;
    v.change(entry);
    await Deno.writeTextFile(join(dir, v.id.replace("/", "_") + ".json"), JSON.stringify(entry));
  }
  return dir;
}
