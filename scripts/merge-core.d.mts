/** Types of scripts/merge-core.mjs, for the tests. */
import type { Metafile } from "esbuild";

/** Merges the chunks `dist/bin.js` imports statically into `dist/chunks/core-N.js`; the CLI's outputs after. */
export declare const mergeCore: (root: string, metafile: Metafile, groupBytes?: number) => Promise<Array<string>>;

/** The esbuild options whose output `mergeCore` reads (chunks under dist/chunks/, ESM, a metafile). */
export declare const splitBuild: {
  readonly outdir: "dist";
  readonly chunkNames: "chunks/[name]-[hash]";
  readonly bundle: true;
  readonly splitting: true;
  readonly format: "esm";
  readonly platform: "node";
  readonly metafile: true;
};
