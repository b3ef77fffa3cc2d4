// hf_encoder.h: BERT-style encoders on the family seam (core/model/arch.h): model_type bert,
// roberta and distilbert, their config.json and their tensors, for load_hf_model
// (core/io/hf_model.h), which dispatches to them.
//
// D = hidden_size (DistilBERT: dim), H = heads, L = layers, V = vocab, F = intermediate_size
// (DistilBERT: hidden_dim), P = max_position_embeddings, Y = type_vocab_size.
// Tensors (a prefix "bert." / "roberta." / "distilbert." or none; LayerNorm ".weight"/".bias"
// or the older ".gamma"/".beta"; Linear weights stored (out, in)):
//   bert, roberta: embeddings.{word_embeddings (V, D), position_embeddings (P, D),
//     token_type_embeddings (Y, D), LayerNorm}; encoder.layer.{l}.attention.self.{query,key,value},
//     attention.output.{dense, LayerNorm}, intermediate.dense (F, D), output.{dense (D, F), LayerNorm};
//     pooler.dense (ignored). Masked-LM head: cls.predictions.{transform.dense, transform.LayerNorm,
//     bias (V), decoder.weight (V, D) tied} (BERT) or lm_head.{dense, layer_norm, bias, decoder}
//     (RoBERTa); cls.seq_relationship (next-sentence head) ignored.
//   distilbert: embeddings.{word_embeddings, position_embeddings, LayerNorm};
//     transformer.layer.{l}.attention.{q_lin,k_lin,v_lin,out_lin}, sa_layer_norm, ffn.{lin1,lin2},
//     output_layer_norm. Masked-LM head: vocab_transform, vocab_layer_norm, vocab_projector.
// RoBERTa's position ids start past its padding index (pad_token_id + 1).
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/error.h"
#include "core/io/hf_model.h"

namespace headmap {

// config.json of an encoder -> its Arch and sizes (HfModelConfig, hf_model.h).
Result<HfModelConfig> parse_encoder_config(const nlohmann::json& j, const std::string& origin);

// The directory's tensors and tokenizer (tokenizer.json, else vocab.txt with
// tokenizer_config.json's do_lower_case).
Result<ModelWeights> load_hf_encoder(const std::filesystem::path& dir, const std::string& dir_in, const HfModelConfig& c);

}  // namespace headmap
