/** The judge providers `--provider` accepts (kept apart from their code so flag parsing stays light). */
export const PROVIDERS = ["heuristic", "openai", "mistral", "ollama", "openai-compatible"] as const
export type ProviderName = (typeof PROVIDERS)[number]
