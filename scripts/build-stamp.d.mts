/** Types of scripts/build-stamp.mjs, for the tests. */
export declare const sha256: (file: string) => string;
export declare const upToDate: (stampFile: string, root: string, recipe: unknown) => boolean;
export declare const writeStamp: (
  stampFile: string,
  root: string,
  recipe: unknown,
  inputs: ReadonlyArray<string>,
  outputs: ReadonlyArray<string>,
) => void;
