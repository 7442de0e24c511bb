/** Types of scripts/merge-core.mjs, for the tests. */
import type { Metafile } from "esbuild";

/** Merges the chunks `dist/bin.js` imports statically into `dist/chunks/core-N.js`; the CLI's outputs after. */
export declare const mergeCore: (root: string, metafile: Metafile, groupBytes?: number) => Promise<Array<string>>;
