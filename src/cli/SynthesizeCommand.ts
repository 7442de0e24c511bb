/**
 * `rag-eval synthesize --docs PATH… --size N --out FILE`: a test set from the team's documents
 * (`src/synthesize/`). The flags are cheap to load (`SynthesizeFlags.ts`); `SynthesizeAction.ts`
 * holds what runs, loaded only when the command runs.
 */
import * as Command from "@effect/cli/Command"
import * as Effect from "effect/Effect"
import { synthesizeConfig } from "./SynthesizeFlags.js"

export const synthesizeCommand = Command.make(
  "synthesize",
  synthesizeConfig,
  (flags) => Effect.flatMap(Effect.promise(() => import("./SynthesizeAction.js")), (m) => m.synthesizeAction(flags))
).pipe(
  Command.withDescription(
    "Write a test set from your documents: questions of several types with references, nuggets and gold passages, each checked before it is kept (resumable, costed; docs/synthesize.md)"
  )
)
