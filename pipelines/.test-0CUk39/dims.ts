export const dims: Array<string> = ["rag-answers/groundedness"]
