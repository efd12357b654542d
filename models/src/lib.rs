//! Chat models: local GGUF with candle and OpenAI-compatible HTTP, both streaming (issue: chat models). Empty until then.
