/** Published image normalisations the image families fall back on (mean and std, RGB order). */

/** CLIP's published normalisation (also OWL-ViT's). */
export const CLIP_MEAN: [number, number, number] = [0.48145466, 0.4578275, 0.40821073];
/** CLIP's published standard deviations. */
export const CLIP_STD: [number, number, number] = [0.26862954, 0.26130258, 0.27577711];
/** ImageNet normalisation (DETR, YOLOS). */
export const IMAGENET_MEAN: [number, number, number] = [0.485, 0.456, 0.406];
/** ImageNet standard deviations. */
export const IMAGENET_STD: [number, number, number] = [0.229, 0.224, 0.225];
