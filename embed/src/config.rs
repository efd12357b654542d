//! A BERT model's `config.json`: the fields the packed encoder reads, with Hugging Face's
//! defaults (`transformers.BertConfig`) where a file may leave one out.

use serde::Deserialize;

/// The shape and arithmetic of a BERT encoder.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    /// `gelu` (exact, erf-based) unless the file says otherwise, as in Hugging Face.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// `absolute` unless the file says otherwise (`relative_key`, …), as in Hugging Face.
    #[serde(default = "default_position_embedding_type")]
    pub position_embedding_type: String,
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
}

fn default_hidden_act() -> String {
    "gelu".into()
}

fn default_position_embedding_type() -> String {
    "absolute".into()
}

fn default_type_vocab_size() -> usize {
    2
}

fn default_layer_norm_eps() -> f64 {
    1e-12
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_config_takes_hugging_face_defaults() {
        let config: BertConfig = serde_json::from_str(
            r#"{"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
                "num_attention_heads": 12, "intermediate_size": 1536,
                "max_position_embeddings": 512, "model_type": "bert"}"#,
        )
        .unwrap();
        assert_eq!(config.hidden_act, "gelu");
        assert_eq!(config.position_embedding_type, "absolute");
        assert_eq!(config.type_vocab_size, 2);
        assert_eq!(config.layer_norm_eps, 1e-12);
    }

    #[test]
    fn other_activations_and_positions_are_read_as_written() {
        let config: BertConfig = serde_json::from_str(
            r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 16,
                "max_position_embeddings": 32, "hidden_act": "relu",
                "position_embedding_type": "relative_key", "layer_norm_eps": 1e-5}"#,
        )
        .unwrap();
        assert_eq!(config.hidden_act, "relu");
        assert_eq!(config.position_embedding_type, "relative_key");
        assert_eq!(config.layer_norm_eps, 1e-5);
    }
}
