import * as Path from "node:path"

/** Relative to the working directory when inside it, else absolute. */
export const displayPath = (path: string) => {
  const relative = Path.relative(process.cwd(), path)
  return relative === "" || relative.startsWith("..") || Path.isAbsolute(relative) ? Path.resolve(path) : relative
}
