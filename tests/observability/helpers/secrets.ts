/** The secrets the logs tests configure, then look for in every line written. */
import { FLEET_TOKEN } from "./process.ts";

export const HF_TOKEN = "hf_ObsGatedAccessToken7Qx2Lm9";
/** A hub token that is not ours: a gated repository that accepts only it fails to load. */
export const OTHER_HUB_TOKEN = "hf_SomebodyElsesToken4Kd8Vb1";
export const API_KEYS = ["obs-api-key-alpha-93KD7", "obs-api-key-bravo-61PW2"];
/** Every secret of a run: none may appear in any output. */
export const SECRETS = [HF_TOKEN, FLEET_TOKEN, ...API_KEYS];
